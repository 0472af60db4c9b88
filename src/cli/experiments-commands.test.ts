import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEvalResult } from '../eval/eval-result.ts';
import { readMetrics } from '../experiments/runs/metrics-log.ts';
import { readTiming } from '../experiments/runs/timing-log.ts';
import { buildProgram } from './main.ts';
import { kernelsDescription } from '../tensor/native.ts';
import { crl } from './testing/spawn-crl.ts';
import { waitFor } from '../util/testing/wait-for.ts';

const TINY = ['--env', 'chunk-sum', '--model', 'tiny', '--batch', '2', '--checkpoint-every', '2', '--from-scratch'];

/** What must replay exactly: the bytes of metrics.jsonl (the wall clock is in timing.jsonl). */
function replayable(run: string): string {
  return readFileSync(join(run, 'metrics.jsonl'), 'utf8');
}

describe('crl experiments commands (spawned)', () => {
  it('has --help for every command', () => {
    const r = crl(['train', '--help']); // the real process once
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: crl train');
    expect(r.stdout).toContain('--resume <run>');
    const program = buildProgram(); // the same program in-process for the rest
    for (const c of ['eval', 'report', 'reproduce', 'sft']) {
      const cmd = program.commands.find((x) => x.name() === c);
      expect(cmd?.helpInformation()).toContain(`Usage: crl ${c}`);
    }
  });

  it('rejects bad config with one clear line per problem and no stack', () => {
    const r = crl([
      'train',
      '--env',
      'chunk-sum',
      '--batch',
      'many',
      '--algorithm',
      'ppo',
      '--out',
      join(mkdtempSync(join(tmpdir(), 'crl-bad-')), 'r'),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('batchEpisodes:');
    expect(r.stderr).toContain('(--batch)');
    expect(r.stderr).toMatch(/algorithm: must be one of "compaction-rl", "ppo-single-window", "broadcast"/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('resumes a run killed with SIGKILL to the same metrics as an uninterrupted run', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-kill-'));
    const full = join(root, 'full');
    const killed = join(root, 'killed');
    const args = ['train', ...TINY, '--iterations', '6', '--seed', '5'];
    expect(crl([...args, '--out', full]).code).toBe(0);

    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args, '--out', killed], {
      stdio: 'ignore',
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (readMetrics(join(killed, 'metrics.jsonl')).length >= 3) {
          clearInterval(timer);
          child.kill('SIGKILL');
          resolve();
        }
      }, 20);
      child.on('exit', () => {
        clearInterval(timer);
        reject(new Error('run finished before it could be killed'));
      });
    });
    await new Promise((r) => child.once('exit', r));
    const before = readMetrics(join(killed, 'metrics.jsonl')).length;
    expect(before).toBeLessThan(6);

    const resumed = crl(['train', '--resume', killed]);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(/starting at iteration (3|5) of 6/); // after checkpoint 2 or 4
    expect(replayable(killed)).toBe(replayable(full));
    expect(readMetrics(join(full, 'metrics.jsonl')).map((l) => l.iteration)).toEqual([1, 2, 3, 4, 5, 6]);
    // The timing lines past the checkpoint went with the metrics lines: each iteration once.
    expect(readTiming(join(killed, 'timing.jsonl')).map((l) => l.iteration)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('a resumed run keeps its actor: the scripted expert stays the expert, and --actor cannot change it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-kill-expert-'));
    const full = join(root, 'full');
    const killed = join(root, 'killed');
    const args = ['train', ...TINY, '--actor', 'expert', '--iterations', '6', '--seed', '7'];
    expect(crl([...args, '--out', full]).code).toBe(0);
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args, '--out', killed], {
      stdio: 'ignore',
    });
    await waitFor(() => readMetrics(join(killed, 'metrics.jsonl')).length >= 3 || child.exitCode !== null, {
      what: 'three iterations of the expert run',
      timeoutMs: 100_000,
      intervalMs: 20,
    });
    child.kill('SIGKILL');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    expect(readMetrics(join(killed, 'metrics.jsonl')).length).toBeLessThan(6);

    const switched = crl(['train', '--resume', killed, '--actor', 'policy']);
    expect(switched.code).toBe(2);
    expect(switched.stderr).toContain('was trained with --actor expert; --resume keeps it: drop --actor policy');
    expect(crl(['train', '--resume', killed]).code).toBe(0);
    // The policy acting instead (random weights) would not replay the expert's episodes.
    expect(replayable(killed)).toBe(replayable(full));
  });

  it('refuses flags together with --resume', () => {
    const r = crl(['train', '--resume', '/nonexistent', '--seed', '3']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('drop --seed');
  });

  it('sft -> eval (x1, x4, writer swap) -> report, end to end', () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-e2e-'));
    const sft = crl([
      'sft',
      '--env',
      'chunk-sum',
      '--model',
      'tiny',
      '--episodes',
      '2',
      '--epochs',
      '1',
      '--out',
      join(root, 'base'),
    ]);
    expect(sft.code).toBe(0);
    expect(JSON.parse(sft.last).loss).toBeGreaterThan(0);
    const ev = crl([
      'eval',
      '--policy',
      join(root, 'base'),
      '--env',
      'chunk-sum',
      '--tasks',
      '2',
      '--samples',
      '4',
      '--windows',
      '1,4',
    ]);
    expect(ev.code).toBe(0);
    expect(JSON.parse(ev.last).system).toBe('base'); // the run's own system: its report row fills
    const out = JSON.parse(ev.last).out as string;
    const res = readEvalResult(out);
    expect(Object.keys(res.modes)).toEqual(['x1', 'x4']);
    expect(res.modes.x4!.samples).toBe(8);
    const expert = crl([
      'eval',
      '--policy',
      'expert',
      '--env',
      'chunk-sum',
      '--tasks',
      '2',
      '--samples',
      '4',
      '--windows',
      '4',
      '--summary-writer',
      'null',
      '--system',
      'expert',
      '--out',
      join(root, 'base', 'eval', 'expert-null.json'),
    ]);
    expect(expert.code).toBe(0);
    expect(readEvalResult(join(root, 'base', 'eval', 'expert-null.json')).summaryWriter).toBe('null');
    const bad = crl([
      'eval',
      '--policy',
      'expert',
      '--env',
      'chunk-sum',
      '--summary-writer',
      'gpt',
      '--out',
      join(root, 'x.json'),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('valid summary writers');
    const badVariant = crl([
      'eval',
      '--policy',
      'expert',
      '--env',
      'kv-ledger',
      '--variant',
      'nope',
      '--out',
      join(root, 'v.json'),
    ]);
    expect(badVariant.code).toBe(2);
    expect(badVariant.stderr).toMatch(/--variant: unknown variant "nope"; valid variants: default, /);
    const rep = crl(['report', join(root, 'base')]);
    expect(rep.code).toBe(0);
    const html = readFileSync(JSON.parse(rep.last).html, 'utf8');
    const markdown = readFileSync(JSON.parse(rep.last).markdown, 'utf8');
    // The documented flow gives real cells: the base row of the main table holds numbers.
    expect(markdown).toMatch(/\| base \(SFT\) \| \d+\.\d \[\d+\.\d, \d+\.\d\] \| \d+\.\d \[/);
    expect(html).toContain('id="table2"');
    expect(html).toContain('id="fig-success"');
    // The report names its runs relative to itself: no absolute path of this machine in it.
    expect(markdown).toContain('Runs: `..`');
    for (const text of [html, markdown]) for (const abs of [root, tmpdir()]) expect(text).not.toContain(abs);
  });

  it('reproduce (smoke preset) ends with the results JSON line', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'crl-rep-')), 'p');
    // --seeds runs a part of a preset; it is recorded in pipeline.json, and --resume keeps it.
    // --out is given relative to the working directory here and absolute on resume: the same pipeline.
    const r = crl(['reproduce', '--preset', 'smoke', '--seeds', '3', '--out', relative(process.cwd(), out)]);
    expect(r.code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'pipeline.json'), 'utf8')).seeds).toEqual([3]);
    expect(existsSync(join(out, 'systems', 'base--chunk-sum--s3'))).toBe(true);
    const summary = JSON.parse(r.last);
    expect(summary.runDir).toBe(relative(process.cwd(), out));
    for (const s of ['base', 'compaction-rl', 'ppo-single-window', 'ppo-single-window-2x']) {
      for (const m of ['x1', 'x4']) {
        const v = summary.results[s][m];
        expect(v.low).toBeLessThanOrEqual(v.passAt1);
        expect(v.high).toBeGreaterThanOrEqual(v.passAt1);
      }
    }
    // The 2x-context system trains and is evaluated in one window of 2C; the base too, for comparison.
    const twoX = readEvalResult(join(out, 'eval', 'ppo-single-window-2x--chunk-sum--s3.json'));
    expect([twoX.contextWindow, Object.keys(twoX.modes)]).toEqual([512, ['x1']]);
    expect(readEvalResult(join(out, 'eval', 'ppo-single-window-2x--at-C256--chunk-sum--s3.json')).contextWindow).toBe(
      256,
    );
    expect(readEvalResult(join(out, 'eval', 'base--at-C512--chunk-sum--s3.json')).contextWindow).toBe(512);
    // Provenance: runs and evaluations name the commit, the command and a config hash.
    const cfgFile = join(out, 'systems', 'compaction-rl--chunk-sum--s3', 'config.json');
    const stored = JSON.parse(readFileSync(cfgFile, 'utf8'));
    expect(stored.provenance.command.slice(0, 2)).toEqual(['crl', 'reproduce']);
    expect(stored.provenance.configHash).toMatch(/^sha256:/);
    const ev = readEvalResult(join(out, 'eval', 'compaction-rl--chunk-sum--s3.json'));
    expect([ev.seed, ev.policy.startsWith('systems/compaction-rl--chunk-sum--s3/')]).toEqual([3, true]);
    expect(ev.provenance?.configHash).toMatch(/^sha256:/);
    // ... and the kernels the numbers came from (another instruction set trains another path).
    expect([stored.provenance.kernels, ev.provenance?.kernels]).toEqual([kernelsDescription(), kernelsDescription()]);
    expect(readFileSync(join(out, 'report', 'report.md'), 'utf8')).toContain(
      `by kernels (another instruction set trains another path): ${kernelsDescription()} (`,
    );
    expect(existsSync(join(out, 'report', 'report.html'))).toBe(true);
    const again = crl(['reproduce', '--resume', out]); // everything on disk: skips to the report
    expect(again.code).toBe(0);
    expect(JSON.parse(again.last)).toEqual({ ...summary, runDir: out });
    expect(JSON.parse(readFileSync(join(out, 'pipeline.json'), 'utf8')).invocations).toHaveLength(2);
    // A run directory made with another config is refused (exit 2), or reused and marked mixed.
    stored.config.optim.policyLr = 0.123;
    writeFileSync(cfgFile, JSON.stringify(stored));
    const mixed = crl(['reproduce', '--resume', out]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('systems/compaction-rl--chunk-sum--s3 was made with another config');
    expect(mixed.stderr).toContain('optim.policyLr: 0.123 -> 0.0001');
    expect(mixed.stderr).toContain('--allow-mixed');
    const allowed = crl(['reproduce', '--resume', out, '--allow-mixed']);
    expect(allowed.code).toBe(0);
    expect(readFileSync(join(out, 'report', 'report.md'), 'utf8')).toMatch(
      /MIXED: reused although made with another config/,
    );
    expect(existsSync(join(out, 'systems', 'base--chunk-sum--s0'))).toBe(false);
    const bad = crl(['reproduce', '--preset', 'smoke', '--envs', 'kv-ledger', '--out', join(out, 'x')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not in this preset: kv-ledger');
  });

  it('reproduce --systems trains and evaluates the named RL systems instead of the preset ones, and --resume keeps them', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'crl-rep-systems-')), 'p');
    // full-trajectory-gae is not a system of the smoke preset: any registered system can be named.
    const r = crl(['reproduce', '--preset', 'smoke', '--systems', 'full-trajectory-gae,compaction-rl', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'pipeline.json'), 'utf8')).systems).toEqual([
      'full-trajectory-gae',
      'compaction-rl',
    ]);
    expect(readdirSync(join(out, 'systems')).sort()).toEqual([
      'base--chunk-sum--s0',
      'compaction-rl--chunk-sum--s0',
      'full-trajectory-gae--chunk-sum--s0',
    ]);
    expect(Object.keys(JSON.parse(r.last).results).sort()).toEqual(['base', 'compaction-rl', 'full-trajectory-gae']);
    const stored = JSON.parse(
      readFileSync(join(out, 'systems', 'full-trajectory-gae--chunk-sum--s0', 'config.json'), 'utf8'),
    );
    expect(stored.config.advantage.estimator).toBe('full-trajectory-gae');
    const again = crl(['reproduce', '--resume', out]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.last).results).toEqual(JSON.parse(r.last).results);
    const [unknown, changed] = [
      crl(['reproduce', '--preset', 'smoke', '--systems', 'nope,base', '--out', join(out, 'x')]),
      crl(['reproduce', '--resume', out, '--systems', 'broadcast']),
    ];
    expect([unknown.code, changed.code]).toEqual([2, 2]);
    expect(unknown.stderr).toMatch(/--systems: unknown: nope, base; the RL systems: .*full-trajectory-gae/);
    expect(changed.stderr).toContain(
      '--envs, --seeds, --systems, --tokenizer, --agent-format, --thinking, --lora-* and --policy-lr cannot change it',
    );
    expect(existsSync(join(out, 'x'))).toBe(false);
  });
});
