import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.ts';
import { flagsToConfig } from './config-flags.ts';
import { loadTrainConfig, parseTrainConfig } from './load-config.ts';

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return [...(e as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}

describe('TrainConfig', () => {
  it('fills docs/method.md defaults', () => {
    const c = parseTrainConfig({});
    expect(c.algorithm).toBe('compaction-rl');
    expect(c.rollout.tailSteps).toBe(2);
    expect(c.rollout.maxWindows).toBe(4);
    expect(c.advantage.gamma).toBe(1);
    expect(c.advantage.lambda).toEqual({ lengthAdaptiveAlpha: 1.5 });
    expect(c.ablation).toEqual({ trainSummaries: true, lossAggregation: 'token-mean', crossTrajectory: true });
  });

  it('names every unknown key with its full path and the valid keys', () => {
    const p = problems(() => parseTrainConfig({ lr: 1, rollout: { windowz: 3 } }));
    expect(p).toHaveLength(2);
    expect(p.some((l) => l.startsWith('lr: unknown key') && l.includes('iterations'))).toBe(true);
    expect(p.some((l) => l.startsWith('rollout.windowz: unknown key') && l.includes('maxWindows'))).toBe(true);
  });

  it('explains bad enum values and types with the path', () => {
    const p = problems(() => parseTrainConfig({ algorithm: 'ppo', ppo: { epochs: 'two' } }));
    expect(p.find((l) => l.startsWith('algorithm:'))).toContain('"compaction-rl"');
    expect(p.find((l) => l.startsWith('ppo.epochs:'))).toMatch(/number/);
  });

  it('rejects single-window PPO with K != 1', () => {
    const p = problems(() => parseTrainConfig({ algorithm: 'ppo-single-window' }));
    expect(p[0]).toContain('rollout.maxWindows');
    expect(parseTrainConfig({ algorithm: 'ppo-single-window', rollout: { maxWindows: 1 } }).rollout.maxWindows).toBe(1);
  });

  it('credit choices (docs/credit.md): defaults leave the resolved config unchanged; flags set them; misuse is named', () => {
    const c = parseTrainConfig({});
    expect(c.advantage).toEqual({ gamma: 1, lambda: { lengthAdaptiveAlpha: 1.5 }, lambdaCritic: 1 });
    expect(c.ppo.whitenAdvantages).toBe(true);
    expect('segmentWeights' in c.ppo).toBe(false);
    const f = parseTrainConfig(
      flagsToConfig({
        estimator: 'full-trajectory-gae',
        segmentWeights: 'inverse-count',
        whiten: 'per-position',
      }),
    );
    expect(f.advantage.estimator).toBe('full-trajectory-gae');
    expect(f.ppo.segmentWeights).toBe('inverse-count');
    expect(f.ppo.whitenAdvantages).toBe('per-position');
    expect(parseTrainConfig(flagsToConfig({ whiten: 'false' })).ppo.whitenAdvantages).toBe(false);
    const d = parseTrainConfig(flagsToConfig({ segmentReward: 'discounted', segmentDiscount: '0.8' }));
    expect(d.advantage).toMatchObject({ segmentReward: 'discounted', segmentDiscount: 0.8 });
    expect(
      problems(() => parseTrainConfig({ algorithm: 'broadcast', advantage: { estimator: 'full-trajectory-gae' } }))[0],
    ).toContain('advantage.estimator');
    expect(
      problems(() => parseTrainConfig({ advantage: { estimator: 'full-trajectory-gae', segmentReward: 'split' } }))[0],
    ).toContain('advantage.segmentReward');
    expect(
      problems(() =>
        parseTrainConfig({ advantage: { estimator: 'full-trajectory-gae' }, ablation: { crossTrajectory: false } }),
      )[0],
    ).toContain('ablation.crossTrajectory');
    expect(problems(() => parseTrainConfig({ advantage: { segmentDiscount: 0.5 } }))[0]).toContain(
      'advantage.segmentDiscount',
    );
    expect(problems(() => parseTrainConfig({ ppo: { whitenAdvantages: 'per-episode' } }))[0]).toContain(
      'ppo.whitenAdvantages',
    );
  });

  it('merges file then flags, flags winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-cfg-'));
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ seed: 3, iterations: 7, rollout: { contextWindow: 400 } }));
    const c = loadTrainConfig({
      file,
      overrides: flagsToConfig({ seed: '9', windows: '2', crossTrajectory: 'false' }),
    });
    expect(c.seed).toBe(9);
    expect(c.iterations).toBe(7);
    expect(c.rollout.contextWindow).toBe(400);
    expect(c.rollout.maxWindows).toBe(2);
    expect(c.ablation.crossTrajectory).toBe(false);
    expect(c.ppo.targetKl).toBeNull(); // the guard is off unless asked for
    expect(
      loadTrainConfig({ overrides: flagsToConfig({ targetKl: '0.01', engineUrl: 'http://127.0.0.1:30000' }) }),
    ).toMatchObject({
      ppo: { targetKl: 0.01 },
      engine: { url: 'http://127.0.0.1:30000', protocol: 'sglang' },
    });
    expect(problems(() => loadTrainConfig({ overrides: flagsToConfig({ targetKl: '-1' }) }))[0]).toMatch(
      /^ppo\.targetKl:/,
    );
  });

  it('reports a bad flag value against its config path', () => {
    const p = problems(() => loadTrainConfig({ overrides: flagsToConfig({ batch: 'many' }) }));
    expect(p[0]).toMatch(/^batchEpisodes:/);
  });

  it('reports unreadable and malformed files clearly', () => {
    expect(problems(() => loadTrainConfig({ file: '/nonexistent/x.json' }))[0]).toContain('/nonexistent/x.json');
    const dir = mkdtempSync(join(tmpdir(), 'crl-cfg-'));
    writeFileSync(join(dir, 'bad.json'), '{ seed: ');
    expect(problems(() => loadTrainConfig({ file: join(dir, 'bad.json') }))[0]).toMatch(/not valid JSON/);
  });
});
