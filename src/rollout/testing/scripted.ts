import type { Environment, SampleRequest, SampleResult, TokenSampler, Tokenizer } from '../../contracts/index.ts';
import { Rng } from '../../util/random.ts';

/**
 * Scripted, token-level test doubles for the runtime's property tests and benchmark: an
 * environment with random instruction and observation lengths, and a sampler that emits random
 * words, sometimes running into its cap without <eot>. Both are seeded.
 */

const WORDS = ['read', 'chunk', 'value', 'key', 'filler', 'go', 'north', 'item', 'ok', 'done', '3', '7', '12'];

export interface RandomEnvOptions {
  /** Instruction length in words. */
  instructionWords: number;
  /** Observation lengths are uniform in [0, maxObservationWords]; above the cap they get cut. */
  maxObservationWords: number;
  /** Probability that a step ends the episode. */
  doneProbability: number;
}

export class RandomEnv implements Environment {
  readonly name = 'scripted-random';
  private rng = new Rng(0);

  constructor(private readonly options: RandomEnvOptions) {}

  reset(seed: number) {
    this.rng = new Rng(seed);
    return { instruction: this.words(this.options.instructionWords) };
  }

  step(_action: string) {
    const observation = this.words(this.rng.int(this.options.maxObservationWords + 1));
    const done = this.rng.next() < this.options.doneProbability;
    return { observation, done, reward: done ? this.rng.int(2) : 0 };
  }

  private words(n: number): string {
    return Array.from({ length: n }, () => this.rng.pick(WORDS)).join(' ');
  }
}

/** What the logging sampler saw and answered, per call. */
export interface SamplerCall {
  episodeId: string;
  stage: 'act' | 'summarize';
  prompt: number[];
  maxTokens: number;
  tokens: number[];
  logprobs: number[];
}

/**
 * Random words then the request's stop id; with probability pCap it runs to maxTokens without it.
 * Logprobs are random negatives (so tests can check they land on the right tokens).
 */
export function randomTokenSampler(options: {
  tokenizer: Tokenizer;
  rng: Rng;
  pCap?: number;
  log?: SamplerCall[];
}): TokenSampler & { calls: number } {
  const { tokenizer, rng, log } = options;
  const pCap = options.pCap ?? 0.2;
  const ids = WORDS.map((w) => tokenizer.encode(w)[0]!);
  const one = (req: SampleRequest): SampleResult => {
    const capped = rng.next() < pCap;
    const n = capped ? req.maxTokens : 1 + rng.int(req.maxTokens);
    const tokens = Array.from({ length: n }, () => rng.pick(ids));
    if (!capped) tokens[n - 1] = req.stopTokens[0]!;
    const logprobs = tokens.map(() => -rng.next() * 5);
    log?.push({
      episodeId: req.episodeId ?? '',
      stage: req.stage ?? 'act',
      prompt: [...req.prompt],
      maxTokens: req.maxTokens,
      tokens: [...tokens],
      logprobs: [...logprobs],
    });
    return { tokens, logprobs, finishReason: capped ? 'length' : 'stop' };
  };
  const sampler = {
    calls: 0,
    sample: async (requests: readonly SampleRequest[]) => {
      sampler.calls++;
      return requests.map(one);
    },
  };
  return sampler;
}
