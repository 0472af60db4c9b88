import { Template } from '@huggingface/jinja';
import type { ActionTools, ToolCall } from '../../contracts/index.ts';
import { ToolArgumentsError } from '../../contracts/index.ts';
import { ChatTemplateError, OBSERVATION_ROLE, type ChatFormat, type ChatTemplateSource } from '../chat-format.ts';
import { knownToolCallSyntaxes, toolCallSyntaxOf, type ToolCallSyntax } from './tool-call-syntax.ts';

/**
 * The tools format (docs/agent-format.md): an agent that acts through its model's own tool calls
 * and may reason in a thinking block first. Every text here is what the model's chat template
 * renders (tools declared in the system turn, calls in the template's syntax, the generation
 * prompt with or without the template's empty thinking block); nothing is written per model.
 */

/** Why a generated execution turn is not exactly one well-formed call of a declared tool. */
export const TOOL_CALL_CAUSES = [
  'bad_json',
  'not_a_call',
  'unknown_tool',
  'bad_arguments',
  'no_call',
  'several_calls',
  'call_in_thinking',
  'unclosed_thinking',
] as const;
export type ToolCallCause = (typeof TOOL_CALL_CAUSES)[number];

/** A generated turn read in the tools format. */
export interface ReadTurn {
  /** The thinking block's text (the template's reasoning_content), or null without one. */
  reasoning: string | null;
  /** Character offset in the turn's text where the content after the thinking block starts. */
  contentStart: number;
  /** The text after the thinking block, the call's block taken out (what the template calls content). */
  content: string;
  /** The one well-formed call of a declared tool, or null. */
  call: ToolCall | null;
  /** Character span of the call in the turn's text. */
  callChars: [number, number] | null;
  /** The text action the call stands for (ActionTools.toAction), or null with an error. */
  action: string | null;
  error: { cause: ToolCallCause; message: string } | null;
}

type Msg = Record<string, unknown> & { role: string };

export interface AgentProtocol {
  readonly syntax: ToolCallSyntax;
  /** The chat format of this protocol's turns (protocolFormat): what the layout and a scripted policy's reading use. */
  readonly format: ChatFormat;
  readonly tools: ActionTools;
  readonly thinking: boolean;
  /** The system turn with the tools declared, as the template renders it (its prefix included). */
  systemText(system: string): string;
  /** The generation prompt (the assistant opening, plus the empty thinking block when thinking is off). */
  readonly promptText: string;
  readAction(text: string): ReadTurn;
  /** The summary the next window sees: the text after the thinking block; and the reasoning. */
  readSummary(text: string): { reasoning: string | null; summary: string };
  /**
   * The assistant turn (opening to turn end) as the template renders it in a later window:
   * `keepReasoning` when no user query follows it (Qwen3 keeps reasoning only after the last one).
   */
  historyText(turn: Pick<ReadTurn, 'reasoning' | 'content' | 'call'>, keepReasoning: boolean): string;
  /** What a scripted policy generates for a call (and its reasoning), the turn end not included. */
  writeAction(reasoning: string | null, call: ToolCall): string;
  writeSummary(reasoning: string | null, summary: string): string;
}

const A = 'crlsentinelA';
const B = 'crlsentinelB';
const C = 'crlsentinelC';

/** The tools format over a chat template; throws ChatTemplateError for a template it cannot use. */
export function createAgentProtocol(options: {
  source: ChatTemplateSource;
  format: ChatFormat;
  tools: ActionTools;
  thinking: boolean;
}): AgentProtocol {
  const { source, format, tools, thinking } = options;
  const fail = (why: string) => new ChatTemplateError(`--agent-format tools with tokenizer ${source.name}: ${why}`);
  if (source.tokenizer.wordLevel)
    throw fail(
      'a word vocabulary cannot write tool calls; use a subword tokenizer with a chat template (--tokenizer qwen3)',
    );
  const syntax = toolCallSyntaxOf(source.chatTemplate);
  if (!syntax)
    throw fail(
      `its chat template writes tool calls in a syntax this runtime does not parse (known: ${knownToolCallSyntaxes().join(', ')})`,
    );
  const template = new Template(source.chatTemplate);
  const specs = tools.tools.map((t) => structuredClone(t));
  const render = (messages: Msg[], gen: boolean): string =>
    template.render({
      ...source.templateVars,
      ...syntax.templateKwargs,
      messages,
      tools: specs,
      add_generation_prompt: gen,
      enable_thinking: thinking,
    });
  const obsOpen = format.text.observation.open;
  const asstOpen = format.text.generationPrompt;
  const asstClose = format.text.assistant.close;

  const sys = render([{ role: 'system', content: A }], false);
  if (!sys.includes(JSON.stringify(specs[0]?.function.name ?? '')))
    throw fail('its chat template does not declare tools in the system turn (a template without tools)');
  const user = render(
    [
      { role: 'system', content: A },
      { role: 'user', content: B },
    ],
    false,
  );
  const genned = render(
    [
      { role: 'system', content: A },
      { role: 'user', content: B },
    ],
    true,
  );
  if (!genned.startsWith(user)) throw fail('its generation prompt changes what was rendered before it');
  const promptText = genned.slice(user.length);
  if (!promptText.startsWith(asstOpen)) throw fail('its generation prompt does not open an assistant turn');
  const userTurn = user.slice(sys.length).split(B);
  if (!user.startsWith(sys) || userTurn.length !== 2) throw fail('a user turn renders differently after the tools');
  const turnFormat = protocolFormat(source, format, { open: userTurn[0]!, close: userTurn[1]! });

  const message = (t: Pick<ReadTurn, 'reasoning' | 'content' | 'call'>): Msg => ({
    role: 'assistant',
    content: t.content,
    ...(t.reasoning !== null ? { reasoning_content: t.reasoning } : {}),
    ...(t.call
      ? { tool_calls: [{ type: 'function', function: { name: t.call.name, arguments: t.call.arguments } }] }
      : {}),
  });
  const historyText = (t: Pick<ReadTurn, 'reasoning' | 'content' | 'call'>, keepReasoning: boolean): string => {
    const head: Msg[] = [{ role: 'user', content: A }];
    const msgs: Msg[] = [...head, message(t), { role: OBSERVATION_ROLE, content: B }];
    if (!keepReasoning) msgs.push({ role: 'user', content: C });
    const full = render(msgs, false);
    const before = render(head, false);
    const at = full.indexOf(obsOpen + B, before.length);
    if (!full.startsWith(before) || at < 0) throw fail('an assistant turn renders differently beside other turns');
    return full.slice(before.length, at);
  };
  const body = (t: Pick<ReadTurn, 'reasoning' | 'content' | 'call'>): string => {
    const turn = historyText(t, true);
    if (!turn.startsWith(asstOpen) || !turn.endsWith(asstClose))
      throw fail(`an assistant turn is not "${asstOpen}…${asstClose}"`);
    const inner = turn.slice(asstOpen.length, turn.length - asstClose.length);
    // With thinking off the generation prompt already holds the empty thinking block.
    const lead = promptText.slice(asstOpen.length);
    return inner.startsWith(lead) ? inner.slice(lead.length) : inner;
  };

  const THINK = '<think>';
  const END_THINK = '</think>';
  const splitThinking = (text: string): { reasoning: string | null; contentStart: number; unclosed: boolean } => {
    const lead = text.length - text.trimStart().length;
    if (!text.startsWith(THINK, lead)) return { reasoning: null, contentStart: 0, unclosed: false };
    const end = text.indexOf(END_THINK, lead);
    if (end < 0) return { reasoning: text.slice(lead + THINK.length), contentStart: text.length, unclosed: true };
    let contentStart = end + END_THINK.length;
    while (text[contentStart] === '\n') contentStart++;
    return {
      reasoning: text.slice(lead + THINK.length, end).replace(/^\n+|\n+$/g, ''),
      contentStart,
      unclosed: false,
    };
  };
  const declared = new Set(tools.tools.map((t) => t.function.name));
  // A template that never renders reasoning (Llama 3.1) would drop every thinking block from the history.
  const probeCall = { name: specs[0]!.function.name, arguments: {} };
  if (thinking && !historyText({ reasoning: C, content: '', call: probeCall }, true).includes(C))
    throw fail('its chat template renders no thinking block; use --thinking off');

  return {
    syntax,
    format: turnFormat,
    tools,
    thinking,
    systemText: (system) => render([{ role: 'system', content: system.trim() }], false),
    promptText,
    readAction(text) {
      const { reasoning, contentStart, unclosed } = splitThinking(text);
      const content = text.slice(contentStart);
      const turn: ReadTurn = {
        reasoning,
        contentStart,
        content,
        call: null,
        callChars: null,
        action: null,
        error: null,
      };
      const err = (cause: ToolCallCause, message: string): ReadTurn => ({ ...turn, error: { cause, message } });
      if (unclosed) return err('unclosed_thinking', `the thinking block has no ${END_THINK}`);
      if (reasoning !== null && syntax.mentionsCall(reasoning))
        return err('call_in_thinking', 'a tool call inside the thinking block is not a call; call after it');
      const parsed = syntax.parse(content, specs);
      const problem = parsed.problems[0];
      if (problem) return err(problem.cause, `the tool call is not well formed: ${problem.detail}`);
      if (parsed.calls.length === 0) return err('no_call', 'no tool call; call exactly one of the declared tools');
      if (parsed.calls.length > 1)
        return err('several_calls', `${parsed.calls.length} tool calls; call exactly one tool per turn`);
      const { call, start, end } = parsed.calls[0]!;
      const located = {
        ...turn,
        // What the template calls content: the text around the call, which tool_calls renders itself.
        content: content.slice(0, start).trimEnd() + content.slice(end),
        call,
        callChars: [contentStart + start, contentStart + end] as [number, number],
      };
      if (!declared.has(call.name))
        return {
          ...located,
          error: {
            cause: 'unknown_tool',
            message: `no tool named ${JSON.stringify(call.name)}; the tools are ${[...declared].join(', ')}`,
          },
        };
      try {
        return { ...located, action: tools.toAction(call) };
      } catch (e) {
        if (!(e instanceof ToolArgumentsError)) throw e;
        return { ...located, error: { cause: 'bad_arguments', message: e.message } };
      }
    },
    readSummary(text) {
      const { reasoning, contentStart } = splitThinking(text);
      return { reasoning, summary: text.slice(contentStart) };
    },
    historyText,
    writeAction: (reasoning, call) => body({ reasoning: thinking ? reasoning : null, content: '', call }),
    writeSummary: (reasoning, summary) =>
      body({ reasoning: thinking ? reasoning : null, content: summary, call: null }),
  };
}

/**
 * The format as this protocol writes turns: the assistant turn opens with the generation prompt
 * (what comes after it, a thinking block included, is the turn's own text), and the user turn is
 * as the protocol's rendering writes it (GLM-4.5 adds /nothink with thinking off).
 */
function protocolFormat(
  source: ChatTemplateSource,
  format: ChatFormat,
  user: { open: string; close: string },
): ChatFormat {
  const assistant = { open: format.text.generationPrompt, close: format.text.assistant.close };
  const same = (a: { open: string; close: string }, b: { open: string; close: string }) =>
    a.open === b.open && a.close === b.close;
  if (same(format.text.user, user) && same(format.text.assistant, assistant)) return format;
  const enc = (s: string) => (s === '' ? [] : source.tokenizer.encode(s));
  const ids = (t: { open: string; close: string }) => ({ open: enc(t.open), close: enc(t.close) });
  return {
    ...format,
    text: { ...format.text, user, assistant },
    turns: { ...format.turns, user: ids(user), assistant: ids(assistant) },
  };
}
