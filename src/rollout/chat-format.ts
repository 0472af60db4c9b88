import { Template } from '@huggingface/jinja';
import type { ChatMessage, Tokenizer } from '../contracts/index.ts';

/**
 * A model's chat format at the token level, derived from its own Jinja chat template (rendered by
 * `@huggingface/jinja`), never written by hand per model (docs/rollout.md, "Chat formats").
 *
 * The template is rendered a few times with sentinel contents to learn, per role, the text that
 * opens and closes a turn; each piece is then encoded once. The runtime builds every window by
 * appending these ids and each turn's own content ids, never by re-rendering a history, which keeps
 * the records token-exact (method §3) even for templates that are not prefix-stable: Qwen3's
 * renders the last assistant turn after the last user query with an (empty) `<think>` block and
 * earlier ones without it. The runtime writes every assistant turn the way the template writes a
 * non-final one (its generation prompt, the content, the turn end), which is also what the template
 * renders for every assistant turn of a window that ends with an observation.
 *
 * Turn ends: the id generation stops on is the first id of "assistant turn end + next turn start".
 * Templates with an end token (Qwen3 `<|im_end|>`, Llama-3 `<|eot_id|>`, the word layout `<eot>`)
 * stop on it; GLM-style templates, where a turn has no end and the next role tag ends it, stop on
 * that tag (`<|observation|>` after an action, `<|user|>` after a summary). Either way the stop id
 * is generated (loss mask 1) and the runtime appends the rest of that seam as context, so in the
 * GLM case the generated tag also opens the next turn.
 */

/** The template role environment observations are rendered as (Qwen3: a user turn in <tool_response>). */
export const OBSERVATION_ROLE = 'tool';

export type Role = ChatMessage['role'];

export interface TurnIds {
  open: readonly number[];
  close: readonly number[];
}

export interface ChatFormat {
  /** Ids every rendering starts with before the first turn ([gMASK]<sop>, the word layout's <bos>). */
  prefix: readonly number[];
  /** assistant.open is the generation prompt. */
  turns: Readonly<Record<Role, TurnIds>>;
  /** The same pieces as text (docs, tests, error messages). */
  text: Readonly<Record<Role, { open: string; close: string }>> & {
    prefix: string;
    /** What add_generation_prompt adds; assistant.open unless earlier turns carry more (GLM-4.5's empty thinking block). */
    generationPrompt: string;
  };
  /** What the template writes before the content of a final assistant turn, if not assistant.open (Qwen3's think block). */
  finalAssistantOpen: string | null;
  /**
   * How an observation's text is written between its turn pieces: as it is, or escaped as a JSON
   * string's inside (Meta's Llama 3.1 template renders a tool result with tojson, between quotes).
   */
  observationContent: 'text' | 'json-string';
}

/** The template cannot be turned into a chat format (a user-fixable tokenizer choice). */
export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}

/** What the derivation needs from a loaded tokenizer (model/tokenizer/load-tokenizer.ts). */
export interface ChatTemplateSource {
  name: string;
  tokenizer: Tokenizer;
  chatTemplate: string;
  templateVars: Readonly<Record<string, string>>;
}

type Msg = { role: string; content: string };

/** Renders a template the way apply_chat_template does (messages, add_generation_prompt, token variables). */
export function renderChat(options: {
  source: Pick<ChatTemplateSource, 'chatTemplate' | 'templateVars'>;
  messages: readonly Msg[];
  addGenerationPrompt: boolean;
}): string {
  const { source } = options;
  return new Template(source.chatTemplate).render({
    ...source.templateVars,
    messages: options.messages.map((m) => ({ ...m })),
    add_generation_prompt: options.addGenerationPrompt,
  });
}

const S = (i: number) => `crlsentinel${i}x`;

export function deriveChatFormat(source: ChatTemplateSource): ChatFormat {
  const fail = (why: string) =>
    new ChatTemplateError(`the chat template of tokenizer ${source.name} cannot be used for windows: ${why}`);
  let template: Template;
  try {
    template = new Template(source.chatTemplate);
  } catch (e) {
    throw fail(`it does not parse (${(e as Error).message})`);
  }
  const r = (messages: readonly Msg[], gen: boolean): string => {
    try {
      return template.render({
        ...source.templateVars,
        messages: messages.map((m) => ({ ...m })),
        add_generation_prompt: gen,
      });
    } catch (e) {
      throw fail(`rendering ${messages.map((m) => m.role).join(', ')} failed (${(e as Error).message})`);
    }
  };
  const m = (role: string, i: number): Msg => ({ role, content: S(i) });
  const split = (text: string, i: number, from: number): [string, string] => {
    const at = text.indexOf(S(i), from);
    if (at < 0 || text.indexOf(S(i), at + 1) >= 0)
      throw fail(`a message's content does not appear exactly once, verbatim, in the rendering (it is transformed)`);
    return [text.slice(from, at), text.slice(at + S(i).length)];
  };
  const after = (text: string, head: string, what: string): string => {
    if (!text.startsWith(head)) throw fail(`adding ${what} changes what was rendered before it`);
    return text.slice(head.length);
  };

  let prefix: string;
  try {
    prefix = template.render({ ...source.templateVars, messages: [], add_generation_prompt: false });
  } catch {
    prefix = ''; // templates that read messages[0] unconditionally: no shared prefix
  }
  const sys0 = r([m('system', 0)], false);
  if (!sys0.startsWith(prefix)) prefix = '';
  const [sysOpen, sysClose] = split(sys0, 0, prefix.length);

  const user1 = r([m('system', 0), m('user', 1)], false);
  const gen1 = r([m('system', 0), m('user', 1)], true);
  if (gen1 === user1)
    throw fail(
      'it renders the same text with and without add_generation_prompt (a base-model template that always ends with the assistant header?)',
    );
  const [userOpen, userClose] = split(after(user1, sys0, 'a user turn'), 1, 0);
  const genPrompt = after(gen1, user1, 'the generation prompt');

  const asst2 = r([m('system', 0), m('user', 1), m('assistant', 2)], false);
  const [finalLead, asstClose] = split(after(asst2, user1, 'an assistant turn'), 2, 0);

  const obs3 = r([m('system', 0), m('user', 1), m('assistant', 2), m(OBSERVATION_ROLE, 3)], false);
  // What the template writes before an earlier assistant turn's content: the generation prompt,
  // or (GLM-4.5) the prompt and an empty thinking block, which the runtime then writes as the prompt.
  const [histLead] = split(after(obs3, user1, 'an assistant turn'), 2, 0);
  const head3 = user1 + histLead + S(2) + asstClose;
  if (!histLead.startsWith(genPrompt) || !obs3.startsWith(head3))
    throw fail(
      `an assistant turn followed by another turn is not "generation prompt + content + turn end" (${JSON.stringify(obs3.slice(user1.length))})`,
    );
  const asstOpen = histLead;
  const [obsOpen, obsClose] = split(obs3.slice(head3.length), 3, 0);
  const probe = `${S(3)}"a\\b\nc`;
  const probed = r(
    [m('system', 0), m('user', 1), m('assistant', 2), { role: OBSERVATION_ROLE, content: probe }],
    false,
  );
  const observationContent = probed.endsWith(obsOpen + JSON.stringify(probe).slice(1, -1) + obsClose)
    ? 'json-string'
    : 'text';

  const text = {
    prefix,
    generationPrompt: genPrompt,
    system: { open: sysOpen, close: sysClose },
    user: { open: userOpen, close: userClose },
    assistant: { open: asstOpen, close: asstClose },
    observation: { open: obsOpen, close: obsClose },
  };
  // Every sequence of turns the runtime builds (method §2): a first window with steps and q_sum,
  // and a rebuilt window with the task repeated, u_resume and a tail step. If the template writes
  // any turn differently in these contexts, appending pieces would not reproduce it.
  const turn = (role: Role, i: number) => text[role].open + S(i) + text[role].close;
  const checks: [Msg[], string][] = [
    [
      [
        m('system', 0),
        m('user', 1),
        m('assistant', 2),
        m(OBSERVATION_ROLE, 3),
        m('assistant', 4),
        m(OBSERVATION_ROLE, 5),
        m('user', 6),
      ],
      prefix +
        turn('system', 0) +
        turn('user', 1) +
        turn('assistant', 2) +
        turn('observation', 3) +
        turn('assistant', 4) +
        turn('observation', 5) +
        turn('user', 6) +
        genPrompt,
    ],
    [
      [m('system', 0), m('user', 1), m('user', 7), m('assistant', 2), m(OBSERVATION_ROLE, 3)],
      prefix +
        turn('system', 0) +
        turn('user', 1) +
        turn('user', 7) +
        turn('assistant', 2) +
        turn('observation', 3) +
        genPrompt,
    ],
  ];
  for (const [messages, expected] of checks) {
    const got = r(messages, true);
    if (got !== expected) {
      let i = 0;
      while (i < got.length && got[i] === expected[i]) i++;
      throw fail(
        `its turns depend on their context (rendering ${messages.map((x) => x.role).join(', ')} differs at ${JSON.stringify(got.slice(i, i + 40))}, expected ${JSON.stringify(expected.slice(i, i + 40))})`,
      );
    }
  }

  const enc = (s: string) => (s === '' ? [] : source.tokenizer.encode(s));
  // Turn pieces are encoded on their own; a content must not merge with them (checked on a sample).
  for (const role of ['system', 'user', 'assistant', 'observation'] as const) {
    const joint = enc(text[role].open + 'read all' + text[role].close);
    const parts = [...enc(text[role].open), ...enc('read all'), ...enc(text[role].close)];
    if (joint.join() !== parts.join())
      throw fail(`its ${role} turn markers merge with the turn's text when encoded (${JSON.stringify(text[role])})`);
  }
  const turns = Object.fromEntries(
    (['system', 'user', 'assistant', 'observation'] as const).map((role) => [
      role,
      { open: enc(text[role].open), close: enc(text[role].close) },
    ]),
  ) as unknown as Record<Role, TurnIds>;
  if (turns.assistant.close.length + turns.observation.open.length === 0 || turns.user.open.length === 0)
    throw fail('an assistant turn is followed by nothing that could end it (no end token and no next-turn tag)');
  return {
    prefix: enc(prefix),
    turns,
    text,
    finalAssistantOpen: finalLead === asstOpen ? null : finalLead,
    observationContent,
  };
}
