import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxAvailable } from '../../sandbox/testing/sandbox-available.ts';
import { loadTokenizer } from '../../model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../../rollout/config.ts';
import type { EpisodeRecord } from '../../rollout/record.ts';
import { runEpisodes } from '../../rollout/runner.ts';
import { textPolicySampler } from '../../rollout/text-policy-sampler.ts';
import { Rng } from '../../util/random.ts';
import { HarborEnv } from '../harbor/harbor-env.ts';
import { loadHarborTasks } from '../harbor/load-tasks.ts';
import { harborOraclePolicy } from '../harbor/oracle-policy.ts';
import { runExpertEpisodes, windowsUsed, type WriterChoice } from '../../experiments/testing/runtime-episodes.ts';
import { generateShellLedger, partText, shellLedger, shellLedgerKnobs } from './index.ts';
import { END_OF_LOG } from './generate.ts';
import { isValueWord } from '../value-words.ts';
import { instructionText } from './task-folder.ts';
import { readShellLedger } from './expert.ts';
import { readWindow } from '../visible-window.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-shell-ledger-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const knobs = shellLedgerKnobs.parse({});

describe('shell-ledger generator', () => {
  it('is seeded, asks about a setting whose answer follows from the parts, and mostly a live one', () => {
    expect(generateShellLedger(7, knobs)).toEqual(generateShellLedger(7, knobs));
    expect(generateShellLedger(7, knobs)).not.toEqual(generateShellLedger(8, knobs));
    let none = 0;
    for (let seed = 0; seed < 300; seed++) {
      const t = generateShellLedger(seed, knobs);
      expect(t.parts.length).toBeGreaterThanOrEqual(knobs.minParts);
      expect(t.parts.length).toBeLessThanOrEqual(knobs.maxParts);
      let v = 'none';
      for (const line of t.parts.flat()) {
        if (line.kind === 'set' && line.key === t.key) v = line.value;
        if (line.kind === 'unset' && line.key === t.key) v = 'none';
      }
      expect(t.answer).toBe(`${t.key} ${v}`);
      expect(isValueWord(v) || v === 'none').toBe(true);
      // Only the last part ends the log.
      expect(t.parts.map((_, i) => partText(t, i).includes(END_OF_LOG))).toEqual(
        t.parts.map((_, i) => i === t.parts.length - 1),
      );
      if (v === 'none') none++;
    }
    expect(none / 300).toBeLessThan(0.05); // guessing 'none' after losing the goal rarely passes
  });

  it('rejects bad knobs, naming them', () => {
    expect(() => shellLedger.create({ minParts: 9, maxParts: 2 })).toThrow(/minParts must be <= maxParts/);
    expect(() => shellLedger.create({ parts: 3 } as never)).toThrow(/parts/);
  });

  it('the expert reads the goal from the instruction and from its own summary clauses', () => {
    const t = generateShellLedger(3, knobs);
    const fromInstruction = readShellLedger(
      readWindow([
        { role: 'system', content: 's' },
        { role: 'user', content: instructionText(t) },
      ]),
    );
    expect(fromInstruction).toMatchObject({ key: t.key, read: 0, ended: false });
    const fromSummary = readShellLedger(
      readWindow([
        { role: 'system', content: 's' },
        {
          role: 'user',
          content: `continue from the summary : goal ${t.key} , read 4 , ${t.key} = tiger , end of log`,
        },
      ]),
    );
    expect(fromSummary).toMatchObject({ key: t.key, read: 4, value: 'tiger', ended: true });
  });
});

const available = sandboxAvailable('shell-ledger episodes');

async function expertRun(writer: WriterChoice, windows: number, n = 24): Promise<EpisodeRecord[]> {
  const seeds = Array.from({ length: n }, (_, i) => shellLedger.evalSeeds.start + i);
  return runExpertEpisodes({ family: shellLedger, seeds, writer, windows, tokenizer: 'qwen3' });
}
const pass = (rs: readonly EpisodeRecord[]) => rs.filter((r) => r.reward >= 1).length / rs.length;

describe.skipIf(!available)('shell-ledger in the sandbox (Qwen3 tokens, default rollout)', () => {
  it('needs compaction: oracle summaries pass >= 95% at x4, x1 mostly fails, median 2-3.5 windows', async () => {
    const x4 = await expertRun('oracle', 4);
    expect(pass(x4)).toBeGreaterThanOrEqual(0.95);
    const w = x4.map(windowsUsed).sort((a, b) => a - b);
    expect(w[Math.floor(w.length / 2)]).toBeGreaterThanOrEqual(2);
    expect(w[Math.floor(w.length / 2)]).toBeLessThanOrEqual(3.5);
    expect(w.some((x) => x === 1)).toBe(true); // a share fits one window
    expect(pass(await expertRun('oracle', 1))).toBeLessThanOrEqual(0.3);
  });

  it('fails with null summaries (<= 20%) and degrades with lossy(0.5)', async () => {
    expect(pass(await expertRun('null', 4, 40))).toBeLessThanOrEqual(0.2);
    expect(pass(await expertRun({ lossy: 0.5 }, 4))).toBeLessThan(0.8);
  });

  it('exported task folders: harbor-oracle passes every one, a policy that only submits none', async () => {
    const dir = join(root, 'suite');
    for (let i = 0; i < 6; i++) {
      const seed = shellLedger.evalSeeds.start + i;
      shellLedger.writeTaskFolder!({ seed, knobs, dir: join(dir, `shell-ledger-${seed}`) });
    }
    const tasks = loadHarborTasks(dir);
    const tokenizer = loadTokenizer('qwen3');
    const { config, layout } = resolveRolloutConfig({ tokenizer, input: {} });
    const run = async (policy: typeof harborOraclePolicy) =>
      runEpisodes({
        episodes: tasks.map((task, i) => ({
          episodeId: `x${i}`,
          env: new HarborEnv({ task, exposeSolution: true }),
          seed: i,
        })),
        config,
        layout,
        actor: textPolicySampler({ tokenizer, policy, rng: new Rng(0) }),
      });
    expect(pass(await run(harborOraclePolicy))).toBe(1);
    expect(pass(await run(() => 'submit'))).toBe(0);
  });
});
