import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { BUILTIN_FAMILIES } from './builtin.ts';
import { variantKnobs } from './knobs.ts';
import { runExpertEpisodes, windowsUsed } from '../experiments/testing/runtime-episodes.ts';

/**
 * Episode-level checks through the real rollout runtime (method §2, default config: C = 256,
 * T_comp = 112, k = 2, L_sum = 48): the expert with oracle summaries succeeds at x4; at the default
 * knobs 30–60% of tasks fit one window and none needs more than four (docs/tasks.md, "Task
 * lengths"); at the fixed-horizon variant (every task long) it fails with null summaries, mostly
 * fails at x1, and the median episode needs 2–3.5 windows.
 */
const tok = new WordTokenizer();
const EOT = tok.specialId('<eot>');
const N = 60;

describe.each(BUILTIN_FAMILIES.map((f) => [f.name, f] as const))('%s expert through the runtime', (_name, family) => {
  const seeds = Array.from({ length: N }, (_, i) => family.evalSeeds.start + i);
  const pass = (rs: { reward: number }[]): number => rs.filter((r) => r.reward >= 1).length / rs.length;

  it('succeeds >= 95% at x4 with oracle summaries; summaries fit L_sum uncut', async () => {
    const recs = await runExpertEpisodes({ family, seeds, writer: 'oracle', windows: 4 });
    expect(pass(recs)).toBeGreaterThanOrEqual(0.95);
    for (const r of recs) {
      for (const s of r.segments.filter((x) => x.kind === 'summary')) {
        const generated = s.tokens.filter((_, i) => s.lossMask[i] === 1);
        expect(generated.length).toBeLessThanOrEqual(48);
        expect(generated[generated.length - 1]).toBe(EOT); // ended by itself, not cut at the cap
      }
    }
  });

  it('default lengths: 30-60% of tasks fit one window (x1), the rest need 2-4 windows', async () => {
    const ws = (await runExpertEpisodes({ family, seeds, writer: 'oracle', windows: 8 })).map(windowsUsed);
    const fit = ws.filter((w) => w === 1).length / N;
    expect(fit).toBeGreaterThanOrEqual(0.3);
    expect(fit).toBeLessThanOrEqual(0.6);
    expect(Math.max(...ws)).toBeLessThanOrEqual(4);
    const x1 = await runExpertEpisodes({ family, seeds, writer: 'oracle', windows: 1 });
    expect(pass(x1)).toBeCloseTo(fit, 10); // x1 passes exactly the tasks that fit
    const none = await runExpertEpisodes({ family, seeds, writer: 'null', windows: 4 });
    expect(pass(none)).toBeLessThanOrEqual(fit + 0.2); // a long task needs its summary
  });

  const fixed = variantKnobs(family, 'fixed-horizon');

  it('fixed horizon: needs 2–3.5 windows at the median (x1 mostly fails)', async () => {
    const unlimited = await runExpertEpisodes({ family, knobs: fixed, seeds, writer: 'oracle', windows: 8 });
    const ws = unlimited.map(windowsUsed).sort((a, b) => a - b);
    const median = (ws[N / 2 - 1]! + ws[N / 2]!) / 2;
    expect(median).toBeGreaterThanOrEqual(2);
    expect(median).toBeLessThanOrEqual(3.5);
    const x1 = await runExpertEpisodes({ family, knobs: fixed, seeds, writer: 'oracle', windows: 1 });
    expect(pass(x1)).toBeLessThanOrEqual(0.2);
  });

  it('fixed horizon: fails with null summaries (<= 20%) and degrades with lossy(0.5)', async () => {
    const none = await runExpertEpisodes({ family, knobs: fixed, seeds, writer: 'null', windows: 4 });
    expect(pass(none)).toBeLessThanOrEqual(0.2);
    const lossy = await runExpertEpisodes({
      family,
      knobs: fixed,
      seeds,
      writer: { lossy: 0.5 },
      windows: 4,
      rngSeed: 7,
    });
    expect(pass(lossy)).toBeLessThan(0.8);
    expect(pass(lossy)).toBeGreaterThan(pass(none));
  });
});

describe('experts with resume.includeTask (instruction repeated before the summary)', () => {
  // Parsing, not sizing: the repeated instruction costs room, so allow more windows.
  it.each(BUILTIN_FAMILIES.map((f) => [f.name, f] as const))(
    '%s never fails with oracle summaries (K = 8)',
    async (_n, family) => {
      const seeds = Array.from({ length: 40 }, (_, i) => family.evalSeeds.start + i);
      const recs = await runExpertEpisodes({
        family,
        seeds,
        writer: 'oracle',
        windows: 8,
        rollout: { resume: { includeTask: true } },
      });
      expect(recs.filter((r) => r.reward >= 1).length / recs.length).toBeGreaterThanOrEqual(0.975);
    },
  );
});
