import { describe, expect, it } from 'vitest';
import type { TextPolicy } from '../contracts/index.ts';
import { getFamily } from '../env/registry.ts';
import { loadTokenizer, type LoadedTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { glmStyleDir, llama3BaseDir, llama3InstructDir } from '../model/tokenizer/testing/tokenizer-dirs.ts';
import { Rng } from '../util/random.ts';
import { ChatTemplateError, deriveChatFormat, OBSERVATION_ROLE, renderChat } from './chat-format.ts';
import { DEFAULT_CHAT_TEMPLATES } from './chat-layout.ts';
import { resolveRolloutConfig } from './config.ts';
import type { EpisodeRecord } from './record.ts';
import { runEpisodes } from './runner.ts';
import { textPolicySampler } from './text-policy-sampler.ts';
import type { Environment, SampleRequest, SampleResult, TokenSampler } from '../contracts/index.ts';

/**
 * The runtime's windows against the model's own template: every prompt the runtime sends in a
 * multi-turn kv-ledger episode (system, task, actions and observations, q_sum, compactions, the
 * rebuilt windows) must equal apply_chat_template — the real template rendered by
 * @huggingface/jinja over the conversation so far — encoded by the tokenizer, turn by turn.
 */

const SOURCES: Record<string, () => LoadedTokenizer> = {
  word: () => loadTokenizer('word'),
  qwen3: () => loadTokenizer('qwen3'),
  'llama-3 (instruct template)': () => loadTokenizer(llama3InstructDir()),
  'glm-style (template in the test)': () => loadTokenizer(glmStyleDir()),
};

// Sizes that fit every layout's markers and never cut a kv-ledger observation.
const ROLLOUT = {
  contextWindow: 480,
  compactThreshold: 200,
  maxActionTokens: 16,
  maxObservationTokens: 64,
  summaryMaxTokens: 64,
  maxWindows: 4,
  tailSteps: 2,
};

type Msg = { role: string; content: string };
interface Logged {
  record: EpisodeRecord;
  calls: { req: SampleRequest; res: SampleResult }[];
  instruction: string;
  steps: { action: string; observation: string }[];
  summaries: string[];
}

async function loggedEpisode(source: LoadedTokenizer, seed: number): Promise<Logged> {
  const family = getFamily('kv-ledger');
  // The word vocabulary's defaults are sized for kv-ledger (decision 0006); real tokenizers get room.
  const sizes = source.tokenizer.wordLevel ? {} : ROLLOUT;
  const input = { ...sizes, maxWindows: 4, tailSteps: seed % 3 };
  const { config, layout } = resolveRolloutConfig({ tokenizer: source, input });
  const log: Omit<Logged, 'record'> = { calls: [], instruction: '', steps: [], summaries: [] };
  const inner = family.create({ minChunks: 11, chunks: 11 }); // every episode compacts (the fixed-horizon variant)
  const env: Environment = {
    name: inner.name,
    reset: async (s) => {
      const r = await inner.reset(s);
      log.instruction = r.instruction;
      return r;
    },
    step: async (a) => {
      const r = await inner.step(a);
      log.steps.push({ action: a, observation: r.observation });
      return r;
    },
  };
  const writer: TextPolicy = (m, rng) => {
    const s = family.summaryWriters.oracle(m, rng);
    log.summaries.push(s);
    return s;
  };
  const logging = (s: TokenSampler): TokenSampler => ({
    sample: async (reqs, params) => {
      const out = await s.sample(reqs, params);
      reqs.forEach((req, i) => log.calls.push({ req, res: out[i]! }));
      return out;
    },
  });
  const [record] = await runEpisodes({
    episodes: [{ episodeId: 'e', env, seed: family.evalSeeds.start + seed }],
    config,
    layout,
    actor: logging(textPolicySampler({ tokenizer: source, policy: family.expert, rng: new Rng(1) })),
    summarizer: logging(textPolicySampler({ tokenizer: source, policy: writer, rng: new Rng(2) })),
  });
  return { record: record!, ...log };
}

/** The conversation each request continues, rebuilt from the environment's and writers' own text. */
function expectedPrompts(source: LoadedTokenizer, run: Logged): { stage: string; messages: Msg[] }[] {
  const sep = source.tokenizer.wordLevel ? ' ' : '\n';
  const out: { stage: string; messages: Msg[] }[] = [];
  let window: Msg[] = [
    { role: 'system', content: DEFAULT_CHAT_TEMPLATES.system },
    { role: 'user', content: run.instruction },
  ];
  let step = 0;
  let compaction = 0;
  for (const { req } of run.calls) {
    if (req.stage === 'act') {
      out.push({ stage: 'act', messages: [...window] });
      const s = run.steps[step++]!;
      window.push({ role: 'assistant', content: s.action }, { role: OBSERVATION_ROLE, content: s.observation });
    } else {
      out.push({
        stage: 'summarize',
        messages: [...window, { role: 'user', content: DEFAULT_CHAT_TEMPLATES.summaryInstruction }],
      });
      const event = run.record.events.filter((e) => e.kind === 'compaction')[compaction]!;
      const summary = run.summaries[compaction++]!;
      const tail = event.tailStepsKept > 0 ? window.slice(-2 * event.tailStepsKept) : [];
      window = [
        { role: 'system', content: DEFAULT_CHAT_TEMPLATES.system },
        { role: 'user', content: `${DEFAULT_CHAT_TEMPLATES.resumePrefix}${sep}${summary}` },
        ...tail,
      ];
    }
  }
  return out;
}

describe('chat formats derived from the templates', () => {
  for (const [name, make] of Object.entries(SOURCES)) {
    it(`${name}: every prompt equals apply_chat_template encoded, through compactions`, async () => {
      const source = make();
      for (const seed of [0, 1, 2]) {
        const run = await loggedEpisode(source, seed);
        expect(run.record.compactions).toBeGreaterThan(0);
        expect(run.record.outcome).toBe('success');
        const expected = expectedPrompts(source, run);
        expect(expected.length).toBe(run.calls.length);
        run.calls.forEach(({ req }, i) => {
          const e = expected[i]!;
          expect(req.stage).toBe(e.stage);
          const rendered = renderChat({ source, messages: e.messages, addGenerationPrompt: true });
          expect(req.prompt).toEqual(source.tokenizer.encode(rendered));
        });
        // Each execution segment is its window: the conversation so far, rendered without a
        // generation prompt and encoded (the window ends with an observation, so no assistant turn is last).
        const windows = expected.filter((e) => e.stage === 'summarize').map((e) => e.messages.slice(0, -1));
        const execs = run.record.segments.filter((s) => s.kind === 'execution');
        windows.forEach((w, j) => {
          expect(execs[j]!.tokens).toEqual(
            source.tokenizer.encode(renderChat({ source, messages: w, addGenerationPrompt: false })),
          );
        });
      }
    });
  }

  it('qwen3: the template is not prefix-stable; the runtime keeps the generation-prompt form', async () => {
    const source = loadTokenizer('qwen3');
    const run = await loggedEpisode(source, 0);
    const sumSeg = run.record.segments.find((s) => s.kind === 'summary')!;
    const summary = run.summaries[0]!;
    const e = expectedPrompts(source, run).find((x) => x.stage === 'summarize')!;
    // Rendered as a finished conversation, Qwen3 writes the last assistant turn after the last
    // user query with an empty <think> block: a re-rendered history would not be a prefix of the
    // next window. The runtime never re-renders: the summary segment is the prompt it sent plus
    // the generated ids, i.e. the generation-prompt form without the block.
    const finished = renderChat({
      source,
      messages: [...e.messages, { role: 'assistant', content: summary }],
      addGenerationPrompt: false,
    });
    expect(finished).toContain(`<|im_start|>assistant\n<think>\n\n</think>\n\n${summary}<|im_end|>`);
    const prompt = source.tokenizer.encode(renderChat({ source, messages: e.messages, addGenerationPrompt: true }));
    expect(sumSeg.tokens).toEqual([
      ...prompt,
      ...source.tokenizer.encode(summary),
      source.tokenizer.encode('<|im_end|>')[0],
    ]);
    expect(deriveChatFormat(source).finalAssistantOpen).toBe('<|im_start|>assistant\n<think>\n\n</think>\n\n');
  });

  it('glm-style: the next role tag ends a turn; the generated stop also opens the next turn', async () => {
    const source = loadTokenizer(glmStyleDir());
    const tok = source.tokenizer;
    const id = (t: string) => tok.encode(t)[0]!;
    const run = await loggedEpisode(source, 1);
    const act = run.calls.find((c) => c.req.stage === 'act')!;
    const sum = run.calls.find((c) => c.req.stage === 'summarize')!;
    expect(act.req.stopTokens).toEqual([id('<|observation|>')]);
    expect(sum.req.stopTokens).toEqual([id('<|user|>')]);
    // In the record, the action's generated ids end with <|observation|> (loss mask 1), and the
    // observation turn continues from it with `\n` (mask 0): one token, two roles.
    const seg = run.record.segments[0]!;
    const at = seg.tokens.indexOf(id('<|observation|>'));
    expect(seg.lossMask[at]).toBe(1);
    expect(seg.tokens[at + 1]).toBe(tok.encode('\n')[0]);
    expect(seg.lossMask[at + 1]).toBe(0);
    expect(tok.decode(seg.tokens.slice(0, at + 2))).toMatch(
      /^\[gMASK\]<sop><\|system\|>\n.*<\|assistant\|>\nread<\|observation\|>\n$/s,
    );
  });

  it('rejects templates the runtime cannot append to, saying why', () => {
    expect(() => deriveChatFormat(loadTokenizer(llama3BaseDir()))).toThrow(ChatTemplateError);
    expect(() => deriveChatFormat(loadTokenizer(llama3BaseDir()))).toThrow(/base-model template/);
    const base = loadTokenizer('qwen3');
    const transformed = { ...base, chatTemplate: '{% for m in messages %}{{ m.content | upper }}{% endfor %}' };
    expect(() => deriveChatFormat(transformed)).toThrow(/transformed/);
    const noTool = {
      ...base,
      chatTemplate:
        "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tools') }}{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    };
    expect(() => deriveChatFormat(noTool)).toThrow(/rendering system, user, assistant, tool failed/);
  });

  it('derives the published pieces of each layout', () => {
    const q = deriveChatFormat(loadTokenizer('qwen3')).text;
    expect(q.observation).toEqual({
      open: '<|im_start|>user\n<tool_response>\n',
      close: '\n</tool_response><|im_end|>\n',
    });
    expect(q.assistant).toEqual({ open: '<|im_start|>assistant\n', close: '<|im_end|>\n' });
    const l = deriveChatFormat(loadTokenizer(llama3InstructDir())).text;
    expect(l.system.open).toBe('<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n');
    expect(l.assistant).toEqual({ open: '<|start_header_id|>assistant<|end_header_id|>\n\n', close: '<|eot_id|>' });
    const g = deriveChatFormat(loadTokenizer(glmStyleDir())).text;
    expect(g.prefix).toBe('[gMASK]<sop>');
    expect(g.assistant).toEqual({ open: '<|assistant|>\n', close: '' });
    const w = deriveChatFormat(loadTokenizer('word')).text;
    expect(w.prefix).toBe('<bos>');
    expect(w.observation).toEqual({ open: ' <obs> ', close: ' <eot>' });
  });
});
