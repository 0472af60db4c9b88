import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { Rng } from '../util/random.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { resolveRolloutConfig } from './config.ts';
import type { EpisodeSpec } from './episode.ts';
import { runEpisodes } from './runner.ts';
import { randomTokenSampler } from './testing/scripted.ts';
import {
  SamplerFault,
  type EnvCallOptions,
  type Environment,
  type EnvReset,
  type EnvStep,
  type SampleRequest,
  type TokenSampler,
} from '../contracts/index.ts';

const source = loadTokenizer('word');

const tokenizer = source.tokenizer as WordTokenizer;
const { config, layout } = resolveRolloutConfig({ tokenizer: source, input: { stepLimit: 6 } });

/** An environment whose calls are asynchronous and scriptable per episode; it logs what happened to it. */
class ScriptedAsyncEnv implements Environment {
  readonly name = 'scripted-async';
  readonly log: string[] = [];
  steps = 0;
  lastSignal: AbortSignal | undefined;
  constructor(
    private readonly script: {
      reset?: () => Promise<EnvReset>;
      step?: (n: number, signal: AbortSignal | undefined) => Promise<EnvStep>;
      close?: () => Promise<void>;
    } = {},
  ) {}
  async reset(_seed: number): Promise<EnvReset> {
    this.log.push('reset');
    return this.script.reset ? this.script.reset() : { instruction: 'read chunk 0' };
  }
  async step(_action: string, options?: EnvCallOptions): Promise<EnvStep> {
    this.steps++;
    this.log.push('step');
    this.lastSignal = options?.signal;
    if (this.script.step) return this.script.step(this.steps, options?.signal);
    return { observation: 'ok', done: this.steps >= 3, reward: 1 };
  }
  async close(): Promise<void> {
    this.log.push('close');
    await this.script.close?.();
  }
}

const spec = (env: Environment, i: number): EpisodeSpec => ({ episodeId: `a${i}`, env, seed: i });

/** Counts calls and which episodes each call carried. */
function watching(inner: TokenSampler): TokenSampler & { batches: string[][] } {
  const batches: string[][] = [];
  return {
    batches,
    sample: (reqs: readonly SampleRequest[], p) => {
      batches.push(reqs.map((r) => r.episodeId ?? '?'));
      return inner.sample(reqs, p);
    },
  };
}

const noCompaction = resolveRolloutConfig({
  tokenizer: source,
  input: { stepLimit: 6, maxWindows: 1, contextWindow: 1024 },
});

describe('runEpisodes with asynchronous environments', () => {
  it('does not wait for the slowest environment: others keep sampling while one step is pending', async () => {
    const sampler = watching(randomTokenSampler({ tokenizer, rng: new Rng(1), pCap: 0 }));
    // Episode 0's first step answers only after the others have been sampled four more times.
    const slow = new ScriptedAsyncEnv({
      step: async (n) => {
        if (n === 1) await waitFor(() => sampler.batches.length >= 5, { what: 'four more batches', intervalMs: 2 });
        return { observation: 'ok', done: n >= 3, reward: 1 };
      },
    });
    const fast = [1, 2, 3].map(
      () => new ScriptedAsyncEnv({ step: (n) => Promise.resolve({ observation: 'ok', done: n >= 6, reward: 1 }) }),
    );
    const records = await runEpisodes({
      episodes: [slow, ...fast].map(spec),
      ...noCompaction,
      actor: sampler,
      batchWaitMs: 1,
    });
    expect(records.map((r) => r.outcome)).toEqual(['success', 'success', 'success', 'success']);
    // Calls 2..5 went out without episode a0, which was still stepping.
    expect(sampler.batches.slice(1, 5).every((b) => !b.includes('a0') && b.length === 3)).toBe(true);
    expect(sampler.batches.some((b) => b.includes('a0') && b.length > 1)).toBe(true); // it rejoined the others
  });

  it('ends only the failing episode as env-error, with the reason in its record, and closes every env once', async () => {
    const broken = new ScriptedAsyncEnv({
      step: (n) =>
        n === 2
          ? Promise.reject(new Error('sandbox died: exit 137'))
          : Promise.resolve({ observation: 'ok', done: false, reward: 0 }),
    });
    const others = [0, 1].map(() => new ScriptedAsyncEnv());
    const envs = [others[0]!, broken, others[1]!];
    const records = await runEpisodes({
      episodes: envs.map(spec),
      config,
      layout,
      actor: randomTokenSampler({ tokenizer, rng: new Rng(2), pCap: 0 }),
    });
    expect(records.map((r) => r.outcome)).toEqual(['success', 'env-error', 'success']);
    const bad = records[1]!;
    expect(bad.reward).toBe(0);
    expect(bad.steps).toBe(1);
    expect(bad.events).toContainEqual({
      kind: 'env-error',
      during: 'step',
      step: 1,
      cause: 'error',
      fault: 'environment', // a plain Error names no fault kind
      message: "the environment's step failed: sandbox died: exit 137",
    });
    // Its last action is still in the execution segment (a failure like any other).
    expect(bad.segments).toHaveLength(1);
    expect(bad.generatedTokens).toBeGreaterThan(0);
    for (const env of envs) expect(env.log.filter((x) => x === 'close')).toHaveLength(1);
  });

  it('times a step out, aborts its signal, and records the timeout', async () => {
    const hung = new ScriptedAsyncEnv({ step: () => new Promise<EnvStep>(() => undefined) });
    const [rec] = await runEpisodes({
      episodes: [spec(hung, 0)],
      config,
      layout,
      actor: randomTokenSampler({ tokenizer, rng: new Rng(3), pCap: 0 }),
      envTimeoutMs: 30,
    });
    expect(rec!.outcome).toBe('env-error');
    expect(rec!.events.at(-1)).toMatchObject({ kind: 'env-error', during: 'step', cause: 'timeout' });
    expect(hung.lastSignal?.aborted).toBe(true);
    expect(hung.log.at(-1)).toBe('close');
  });

  it('records a failed reset as an episode with no segments', async () => {
    const env = new ScriptedAsyncEnv({ reset: () => Promise.reject(new Error('no such task folder')) });
    const [rec] = await runEpisodes({
      episodes: [spec(env, 0)],
      config,
      layout,
      actor: randomTokenSampler({ tokenizer, rng: new Rng(4) }),
    });
    expect(rec).toMatchObject({ outcome: 'env-error', reward: 0, steps: 0, segments: [], generatedTokens: 0 });
    expect(rec!.events[0]).toMatchObject({ during: 'reset', message: expect.stringContaining('no such task folder') });
    expect(env.log).toEqual(['reset', 'close']);
  });

  it('records a failing close without changing the outcome', async () => {
    const env = new ScriptedAsyncEnv({ close: () => Promise.reject(new Error('workspace busy')) });
    const [rec] = await runEpisodes({
      episodes: [spec(env, 0)],
      config,
      layout,
      actor: randomTokenSampler({ tokenizer, rng: new Rng(5), pCap: 0 }),
    });
    expect(rec!.outcome).toBe('success');
    expect(rec!.events.at(-1)).toMatchObject({ kind: 'env-error', during: 'close', cause: 'error' });
  });

  it('cancels: aborts in-flight steps, closes every open env, and rejects', async () => {
    const controller = new AbortController();
    const envs = [0, 1, 2].map(
      () =>
        new ScriptedAsyncEnv({
          step: (n, signal) =>
            new Promise<EnvStep>((resolve, reject) => {
              if (n === 2) {
                signal?.addEventListener('abort', () => reject(new Error('aborted')));
                controller.abort(new Error('stop now'));
              } else resolve({ observation: 'ok', done: false, reward: 0 });
            }),
        }),
    );
    await expect(
      runEpisodes({
        episodes: envs.map(spec),
        config,
        layout,
        actor: randomTokenSampler({ tokenizer, rng: new Rng(6), pCap: 0 }),
        signal: controller.signal,
        concurrency: 2,
      }),
    ).rejects.toThrow('stop now');
    expect(envs[0]!.log.at(-1)).toBe('close');
    expect(envs[1]!.log.at(-1)).toBe('close');
    expect(envs[2]!.log).toEqual([]); // never started
    expect(envs[0]!.lastSignal?.aborted).toBe(true);
  });

  it('a failing sampler ends the run after closing every open env', async () => {
    const envs = [0, 1].map(() => new ScriptedAsyncEnv());
    let calls = 0;
    const flaky: TokenSampler = {
      sample: async (reqs, p) => {
        if (++calls === 2) throw new Error('engine unreachable');
        return randomTokenSampler({ tokenizer, rng: new Rng(7), pCap: 0 }).sample(reqs, p);
      },
    };
    await expect(runEpisodes({ episodes: envs.map(spec), config, layout, actor: flaky })).rejects.toThrow(
      'engine unreachable',
    );
    for (const env of envs) expect(env.log.at(-1)).toBe('close');
  });

  it('adds no abort listener per call to a shared signal: 24 steps in flight at once, no MaxListenersExceededWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const caller = new AbortController();
      const n = 24; // Node warns at 11 listeners on one AbortSignal
      let waiting = 0;
      let release: () => void = () => undefined;
      const allIn = new Promise<void>((r) => (release = r));
      const callerListeners: number[] = [];
      const envs = Array.from(
        { length: n },
        () =>
          new ScriptedAsyncEnv({
            // Every episode's steps wait until all n are inside one, so n calls are in flight together.
            step: async (k, signal) => {
              signal?.addEventListener('abort', () => undefined); // an environment listens, as a sandbox does
              if (k === 1) {
                if (++waiting === n) release();
                await allIn;
                callerListeners.push(getEventListeners(caller.signal, 'abort').length);
              }
              return { observation: 'ok', done: k >= 3, reward: 1 };
            },
          }),
      );
      for (let round = 0; round < 2; round++) {
        waiting = 0;
        const records = await runEpisodes({
          episodes: envs.map((e, i) => spec(round === 0 ? e : new ScriptedAsyncEnv(), i)),
          ...noCompaction,
          actor: randomTokenSampler({ tokenizer, rng: new Rng(8), pCap: 0 }),
          signal: caller.signal,
        });
        expect(records.every((r) => r.outcome === 'success')).toBe(true);
      }
      await new Promise((r) => setImmediate(r)); // warnings are emitted on a later tick
      expect(callerListeners).toHaveLength(n);
      expect(new Set(callerListeners)).toEqual(new Set([1])); // the run's own, once
      expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0); // removed when the run ended
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('runEpisodes when the engine fails some requests', () => {
  it('a SamplerFault ends only the episodes whose requests failed, as engine faults; a plain sampler error ends the run', async () => {
    const inner = randomTokenSampler({ tokenizer, rng: new Rng(4), pCap: 0 });
    let calls = 0;
    // Its third call fails episode a1's request (the engine went away for it) and answers a0's and a2's.
    const flaky: TokenSampler = {
      sample: async (reqs, p) => {
        const results = await inner.sample(reqs, p);
        if (++calls !== 3) return results;
        const failed = reqs.map((r) => r.episodeId === 'a1');
        throw new SamplerFault(
          'engine gone',
          results.map((r, i) => (failed[i] ? null : r)),
          failed.map((f) => (f ? 'http://127.0.0.1:9/generate: cannot reach the engine' : null)),
        );
      },
    };
    const envs = [0, 1, 2].map(() => new ScriptedAsyncEnv());
    const records = await runEpisodes({ episodes: envs.map(spec), ...noCompaction, actor: flaky });
    expect(records.map((r) => r.outcome)).toEqual(['success', 'env-error', 'success']);
    expect(records[1]!.events).toEqual([
      {
        kind: 'env-error',
        during: 'sample',
        step: expect.any(Number),
        cause: 'error',
        fault: 'engine',
        message: 'http://127.0.0.1:9/generate: cannot reach the engine',
      },
    ]);
    expect(records[1]!.reward).toBe(0);
    expect(envs[1]!.log.at(-1)).toBe('close');

    const broken: TokenSampler = {
      sample: async () => {
        throw new Error('HTTP 400: the request is wrong');
      },
    };
    const closed = [0, 1].map(() => new ScriptedAsyncEnv());
    await expect(runEpisodes({ episodes: closed.map(spec), ...noCompaction, actor: broken })).rejects.toThrow(
      /HTTP 400/,
    );
    expect(closed.map((e) => e.log.at(-1))).toEqual(['close', 'close']);
  });
});

describe('runEpisodes announces the episodes after the running ones', () => {
  it('calls prepare on the episode that takes a slot next, before its reset, never on the first ones; a throwing prepare is only a hint', async () => {
    const events: string[] = [];
    const envs = Array.from({ length: 5 }, (_, i) => {
      const env = new ScriptedAsyncEnv({
        reset: async () => {
          events.push(`reset ${i}`);
          return { instruction: 'read chunk 0' };
        },
      });
      return Object.assign(env, {
        prepare: () => {
          events.push(`prepare ${i}`);
          if (i === 3) throw new Error('prepare fails: reset will say so');
        },
      });
    });
    const records = await runEpisodes({
      episodes: envs.map(spec),
      ...noCompaction,
      actor: randomTokenSampler({ tokenizer, rng: new Rng(3), pCap: 0 }),
      concurrency: 2,
      batchWaitMs: 1,
    });
    expect(records.map((r) => r.outcome)).toEqual(['success', 'success', 'success', 'success', 'success']);
    // Episodes 0 and 1 start at once; each start announces the episode two places on.
    expect(events.filter((e) => e.startsWith('prepare'))).toEqual(['prepare 2', 'prepare 3', 'prepare 4']);
    for (const i of [2, 3, 4]) expect(events.indexOf(`prepare ${i}`)).toBeLessThan(events.indexOf(`reset ${i}`));
    // Announced when episode i - 2 started: before that episode's reset.
    for (const i of [2, 3, 4]) expect(events.indexOf(`prepare ${i}`)).toBeLessThan(events.indexOf(`reset ${i - 2}`));
  });
});
