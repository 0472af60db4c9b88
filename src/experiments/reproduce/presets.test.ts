import { describe, expect, it } from 'vitest';
import { deepMerge } from '../../config/config-flags.ts';
import { parseTrainConfig } from '../../config/load-config.ts';
import { getFamily } from '../../env/registry.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import { evalTaskSeeds } from '../evaluate/eval-runner.ts';
import { getPreset, presetNames } from './presets.ts';
import type { Preset } from './preset-types.ts';
import { withTokenizer } from './preset-tokenizer.ts';
import { evalRequests } from './reproduce-evals.ts';
import { trainingWindowsOf } from './reproduce.ts';
import { SftConfigSchema } from '../sft/sft-config.ts';
import {
  ASYNC_SYSTEMS,
  contextWindowOf,
  CREDIT_SYSTEMS,
  PAPER_RL_SYSTEMS,
  RL_SYSTEMS,
  SYSTEM_NAMES,
  systemOverrides,
  type SystemName,
} from './systems.ts';

/** The SFT config `crl reproduce` builds for (preset, env), sftByEnv merged as there. */
const sftConfigOf = (p: Preset, env: string) =>
  SftConfigSchema.parse(
    deepMerge(deepMerge(p.sft, p.sftByEnv?.[env] ?? {}), {
      env: { name: env, knobs: p.knobs?.[env] ?? {} },
      seed: p.baseSeed ?? p.seeds[0],
    }),
  );

/** Throws (with the budget's problems) if the rollout config cannot run with this tokenizer. */
const resolves = (input: unknown, tokenizer: string | undefined) =>
  resolveRolloutConfig({ input, tokenizer: loadTokenizer(tokenizer ?? 'word') });

/**
 * Every stage of a preset, as `crl reproduce` would run it, resolves: families and systems exist,
 * seeds are sound, evaluation tasks come from the evaluation seeds only, every SFT, training and
 * evaluation rollout fits its token budget (resolveRolloutConfig), the evaluated systems are trained.
 */
function checkPreset(p: Preset): void {
  expect(p.envs.length).toBeGreaterThan(0);
  expect(p.seeds.length).toBeGreaterThan(0);
  expect(new Set(p.seeds).size).toBe(p.seeds.length);
  for (const seed of p.seeds) expect(Number.isInteger(seed) && seed >= 0).toBe(true);
  if (p.baseSeed !== undefined) expect(p.seeds).toContain(p.baseSeed);
  expect(p.systems.length).toBeGreaterThan(0);
  expect(new Set(p.systems).size).toBe(p.systems.length);
  for (const s of p.systems) expect(RL_SYSTEMS).toContain(s);
  const trained = new Set<SystemName>(['base', ...p.systems]);
  for (const s of [...p.eval.writerSystems, ...p.eval.heldOutSystems]) {
    expect(SYSTEM_NAMES).toContain(s);
    expect(trained.has(s), `${s} is evaluated but not trained`).toBe(true);
  }
  const K = trainingWindowsOf(p);
  expect(p.eval.windows).toContain(K); // the xK mode of method §8
  for (const w of p.eval.longerWindows) expect(w).toBeGreaterThan(K);
  const C = contextWindowOf(p.train);
  for (const env of p.envs) {
    const family = getFamily(env);
    // Evaluation tasks: distinct, from the evaluation range, never a training seed (method §8).
    const { trainSeeds: tr, evalSeeds: ev } = family;
    expect(tr.end <= ev.start || ev.end <= tr.start).toBe(true);
    const tasks = evalTaskSeeds(family, { tasks: p.eval.tasks });
    expect(new Set(tasks).size).toBe(p.eval.tasks);
    for (const t of tasks) expect(t >= ev.start && t < ev.end && !(t >= tr.start && t < tr.end)).toBe(true);
    expect(p.eval.heldOutVariants).toBeLessThanOrEqual(Object.keys(family.variants).length);
    const sftKnobs = p.knobs?.[env] ?? {};
    const knobs = { ...sftKnobs, ...(p.rlKnobs?.[env] ?? {}) };
    expect(() => family.create(knobs)).not.toThrow();
    const sft = sftConfigOf(p, env);
    expect(() => resolves(sft.rollout, sft.tokenizer)).not.toThrow();
    for (const system of p.systems) {
      const train = parseTrainConfig(
        deepMerge(
          deepMerge(p.train, { env: { name: env, knobs }, seed: p.seeds[0] }),
          systemOverrides(system, p.train),
        ),
        system,
      );
      expect(() => resolves(train.rollout, train.tokenizer ?? sft.tokenizer)).not.toThrow();
      // RL starts from a checkpoint of the SFT model; the base's positions cover every system's C
      // (C itself, and 2C for the 2x-context system).
      expect(train.model.preset).toBe(sft.model.preset);
      const sftC = sft.rollout.contextWindow ?? C;
      expect(train.rollout.contextWindow ?? C).toBeLessThanOrEqual(Math.max(sftC, sft.model.maxSeqLen ?? 0));
      if (system === 'ppo-single-window-2x') {
        expect(train.rollout.contextWindow).toBe(2 * sftC);
        expect(train.rollout.maxWindows).toBe(1);
      } else expect(train.rollout.contextWindow ?? C).toBe(sftC);
    }
    const policies = Object.fromEntries([...trained].map((s) => [s, { dir: s, configHash: s }]));
    const reqs = evalRequests({
      preset: p,
      env,
      tag: env,
      knobs: { ...(p.knobs?.[env] ?? {}), ...(p.rlKnobs?.[env] ?? {}) },
      variants: Object.keys(family.variants),
      seed: p.seeds[0]!,
      trainingWindows: K,
      contextWindow: C,
      policies,
      actor: 'expert',
      outDir: 'out',
    });
    expect(reqs.length).toBeGreaterThan(0);
    for (const req of reqs)
      for (const windows of req.windows)
        expect(() => resolves({ ...req.rollout, maxWindows: windows }, req.tokenizer)).not.toThrow();
  }
}

describe('reproduce presets', () => {
  it.each(presetNames())('%s: every stage resolves and fits its budget, as reproduce runs it', (name) => {
    checkPreset(getPreset(name));
  });

  it.each(presetNames().filter((n) => getPreset(n).tokenizer === undefined))(
    '%s with --tokenizer qwen3: every stage still resolves and fits its budget',
    (name) => {
      checkPreset(withTokenizer(getPreset(name), 'qwen3'));
    },
  );

  // table4-mixed reuses the quick preset's base and its seed: same SFT config, same RL config per system.
  it("table4-mixed: the quick preset's base, shared by several RL seeds", () => {
    const quick = getPreset('quick');
    const t4 = getPreset('table4-mixed');
    expect(quick.seeds).toContain(t4.baseSeed);
    expect(t4.seeds.length).toBeGreaterThan(1);
    expect(t4.sft).toEqual(quick.sft);
    expect(t4.knobs).toEqual(quick.knobs);
    expect(t4.train).toEqual(quick.train);
    expect(t4.eval.windows).toEqual(quick.eval.windows);
    expect(t4.systems.every((s) => quick.systems.includes(s))).toBe(true);
  });

  it('a subword tokenizer scales the token counts and writes kv-ledger values as words; word changes nothing', () => {
    const quick = getPreset('quick');
    expect(withTokenizer(quick, 'word')).toBe(quick);
    const q = withTokenizer(quick, 'qwen3');
    expect(q.knobs?.['kv-ledger']).toEqual({ ...quick.knobs?.['kv-ledger'], valueWords: true });
    // The window grows with the tokenizer's tokens per word, and SFT and RL keep one C between them.
    const wordC = contextWindowOf(quick.train);
    expect(q.sft.rollout?.contextWindow).toBeGreaterThan(wordC);
    expect(contextWindowOf(q.train)).toBe(q.sft.rollout?.contextWindow);
    expect(q.train.tokenizer).toBe('qwen3');
    expect(sftConfigOf(q, 'kv-ledger').tokenizer).toBe('qwen3');
    const terminal = getPreset('terminal');
    expect(withTokenizer(terminal, 'qwen3').knobs).toEqual(terminal.knobs);
  });

  // Slips (docs/decisions/0028) make the full preset's base err where it acts; the other presets keep
  // the plain expert, except credit, which compares credit choices on the full recipe.
  it("only the full preset's demonstrator slips, and its per-family rate reaches that family's SFT config", () => {
    const full = getPreset('full');
    const slips = Object.fromEntries(full.envs.map((env) => [env, sftConfigOf(full, env).slipP]));
    for (const [env, p] of Object.entries(slips)) {
      expect(p, env).toBeGreaterThan(0);
      expect(p, env).toBeLessThan(0.5); // a demonstrator that mostly slips would teach the wrong answer
      expect(p, env).toBe(full.sftByEnv?.[env]?.slipP ?? full.sft.slipP);
    }
    expect(new Set(Object.values(slips)).size).toBeGreaterThan(1); // the kv-ledger override differs
    expect(getPreset('credit').sft).toEqual(full.sft);
    expect(getPreset('credit').sftByEnv).toEqual(full.sftByEnv);
    for (const name of presetNames().filter((n) => n !== 'full' && n !== 'credit'))
      for (const env of getPreset(name).envs) expect(sftConfigOf(getPreset(name), env).slipP ?? 0, name).toBe(0);
  });

  it('the credit presets pair every credit system with CompactionRL on one shared base per family, 5+ seeds', () => {
    for (const name of ['credit', 'credit-mixed', 'credit-terminal']) {
      const p = getPreset(name);
      expect(p.baseSeed).toBe(0);
      expect(p.seeds.length).toBeGreaterThanOrEqual(5);
      for (const s of ['compaction-rl', 'no-cross-trajectory-gae', ...CREDIT_SYSTEMS]) expect(p.systems).toContain(s);
    }
    expect(getPreset('credit').envs).toEqual(['kv-ledger', 'fog-courier', 'hop-search']);
    // The terminal family's comparison starts from the terminal preset's own base and RL recipe.
    expect(getPreset('credit-terminal').sft).toEqual(getPreset('terminal').sft);
    expect(getPreset('credit-terminal').train).toEqual(getPreset('terminal').train);
    // Seed 0 of credit-mixed trains CompactionRL exactly as table4-mixed does.
    expect(getPreset('credit-mixed').train).toEqual(getPreset('table4-mixed').train);
    // The paper's presets keep the paper's systems.
    expect(getPreset('quick').systems).toEqual([...PAPER_RL_SYSTEMS]);
  });

  it('async-mixed compares S = 1, 2 with and without decoupled PPO against the quick CompactionRL on one base', () => {
    const p = getPreset('async-mixed');
    expect(p.systems).toEqual(['compaction-rl', ...ASYNC_SYSTEMS]);
    expect(p.baseSeed).toBe(0);
    expect(p.seeds.length).toBeGreaterThanOrEqual(3);
    expect(p.sft).toEqual(getPreset('quick').sft);
    expect(p.train).toEqual(getPreset('quick').train);
    const parsed = (s: string) => parseTrainConfig(deepMerge(p.train, systemOverrides(s, p.train)));
    expect(parsed('compaction-rl').maxStaleness ?? 0).toBe(0);
    expect([parsed('staleness-2').maxStaleness, parsed('staleness-2').ppo.offPolicy ?? 'none']).toEqual([2, 'none']);
    const fast = getPreset('async-mixed-lr3e-4');
    expect({ ...fast.train, optim: undefined }).toEqual({ ...p.train, optim: undefined });
    expect(fast.train.optim?.policyLr).toBe(3e-4);
    expect([fast.systems, fast.sft]).toEqual([p.systems, p.sft]);
    expect([parsed('staleness-1-decoupled').maxStaleness, parsed('staleness-1-decoupled').ppo.offPolicy]).toEqual([
      1,
      'decoupled',
    ]);
  });

  it('an unknown preset names the valid ones', () => {
    expect(() => getPreset('nope')).toThrow(`valid presets: ${presetNames().join(', ')}`);
  });
});
