import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kvLedger } from '../env/kv-ledger/index.ts';
import { saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { readRecordsFile } from '../rollout/record-file.ts';
import { Rng } from '../util/random.ts';
import { reportError } from './errors.ts';
import { buildProgram } from './main.ts';
import { parseSummaryWriter } from './run-flags.ts';
import { crl } from './testing/spawn-crl.ts';

describe('crl run (spawned)', () => {
  it('runs the expert with compaction, writes valid records and ends with the summary JSON line', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'crl-run-')), 'runs', 'chunk.jsonl');
    const r = crl([
      'run',
      '--env',
      'kv-ledger',
      '--policy',
      'expert',
      '--episodes',
      '4',
      '--windows',
      '4',
      '--seed',
      '3',
      '--out',
      out,
    ]);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code).toBe(0);
    const last = r.stdout.trim().split('\n').pop()!;
    const summary = JSON.parse(last);
    expect(Object.keys(summary).sort()).toEqual([
      'envErrors',
      'episodes',
      'faults',
      'meanCompactions',
      'meanGeneratedTokens',
      'passAt1',
      'truncated',
    ]);
    const records = readRecordsFile(out);
    expect(records).toHaveLength(4);
    expect(summary.episodes).toBe(4);
    expect(summary.envErrors).toBe(0);
    expect(summary.faults).toEqual({ sandbox: 0, verifier: 0, engine: 0, environment: 0 });
    expect(summary.passAt1).toBeCloseTo(1, 12);
    expect(summary.meanCompactions).toBeCloseTo(records.reduce((a, x) => a + x.compactions, 0) / 4, 12);
    expect(summary.meanCompactions).toBeGreaterThan(0);
    const start = kvLedger.evalSeeds.start;
    expect(records.map((x) => x.seed).sort()).toEqual([3, 4, 5, 6].map((i) => start + i));
    expect(records.every((x) => x.env === 'kv-ledger')).toBe(true);
  });

  it('without --out, writes the records to a new file under runs/ and names it on stderr', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'crl-run-noout-'));
    const args = ['run', '--env', 'kv-ledger', '--policy', 'expert', '--episodes', '2'];
    const first = crl(args, { cwd });
    expect(first.code, first.stderr).toBe(0);
    const named = /records go to (runs\/run-\d{8}T\d{6}Z(?:-\d+)?\.jsonl)/.exec(first.stderr);
    expect(named, first.stderr).not.toBeNull();
    expect(readRecordsFile(join(cwd, named![1]!))).toHaveLength(2);
    // A second run in the same second gets its own file: nothing is replaced.
    const second = crl(args, { cwd });
    expect(second.code, second.stderr).toBe(0);
    expect(readdirSync(join(cwd, 'runs'))).toHaveLength(2);
    // A bad --env is reported before runs/ is made or a file named.
    const empty = mkdtempSync(join(tmpdir(), 'crl-run-badenv-'));
    const bad = crl(['run', '--env', 'nope', '--episodes', '1'], { cwd: empty });
    expect(bad.code, bad.stderr).toBe(2);
    expect(bad.stderr).toMatch(/unknown environment "nope"/);
    expect(bad.stderr).not.toMatch(/records go to/);
    expect(readdirSync(empty)).toEqual([]);
  });

  it('runs the embedded model from a checkpoint directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-ckpt-'));
    const tokenizer = new WordTokenizer();
    const config = modelConfig('tiny', { vocabSize: tokenizer.vocabSize, maxSeqLen: 256 });
    await saveCheckpoint(dir, { policy: new PolicyModel({ config, optim: DEFAULT_OPTIMIZER, rng: new Rng(1) }) });
    const out = join(dir, 'model.jsonl');
    const r = crl(['run', '--env', 'chunk-sum', '--policy', dir, '--episodes', '2', '--out', out]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!).episodes).toBe(2);
    const records = readRecordsFile(out);
    // The model's sampling logprobs are recorded on every generated token.
    const generated = records.flatMap((rec) =>
      rec.segments.flatMap((seg) => seg.logprobs.filter((_, i) => seg.lossMask[i] === 1)),
    );
    expect(generated.length).toBeGreaterThan(0);
    expect(generated.every((x) => typeof x === 'number' && x <= 0)).toBe(true);
  });

  it('truncates with a single window and a null summary writer loses the task', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-run-'));
    const single = JSON.parse(
      crl(['run', '--env', 'chunk-sum', '--episodes', '2', '--windows', '1', '--out', join(dir, 'a.jsonl')])
        .stdout.trim()
        .split('\n')
        .pop()!,
    );
    expect(single).toMatchObject({ passAt1: 0, truncated: 2, meanCompactions: 0 });
    const nul = JSON.parse(
      crl(['run', '--env', 'chunk-sum', '--episodes', '2', '--summary-writer', 'null', '--out', join(dir, 'b.jsonl')])
        .stdout.trim()
        .split('\n')
        .pop()!,
    );
    expect(nul.passAt1).toBeLessThan(1);
  });

  it('lossy:P:G sets the goal-drop probability: hop-search fails without its question (run and eval)', () => {
    const LONG = '{"minHops":5,"hops":5}'; // every task needs a summary (shorter ones fit one window)
    const dir = mkdtempSync(join(tmpdir(), 'crl-run-'));
    const last = (r: { stdout: string }) => JSON.parse(r.stdout.trim().split('\n').pop()!);
    const kept = last(
      crl([
        'run',
        '--env',
        'hop-search',
        '--knobs',
        LONG,
        '--episodes',
        '4',
        '--summary-writer',
        'lossy:0:0',
        '--out',
        join(dir, 'kept.jsonl'),
      ]),
    );
    const lost = last(
      crl([
        'run',
        '--env',
        'hop-search',
        '--knobs',
        LONG,
        '--episodes',
        '4',
        '--summary-writer',
        'lossy:0:1',
        '--out',
        join(dir, 'lost.jsonl'),
      ]),
    );
    expect(kept.passAt1).toBe(1);
    expect(lost.passAt1).toBe(0);
    const ev = crl([
      'eval',
      '--policy',
      'expert',
      '--env',
      'hop-search',
      '--knobs',
      LONG,
      '--tasks',
      '2',
      '--samples',
      '2',
      '--windows',
      '4',
      '--summary-writer',
      'lossy:0:1',
      '--out',
      join(dir, 'eval.json'),
    ]);
    expect(ev.code).toBe(0);
    const result = JSON.parse(readFileSync(join(dir, 'eval.json'), 'utf8'));
    expect(result.summaryWriter).toBe('lossy:0:1');
    expect(result.modes.x4.passAt1).toBe(0);
  });

  it('reports a bad flag clearly from the real process, without a stack trace', () => {
    const r = crl([
      'run',
      '--env',
      'chunk-sum',
      '--threshold',
      '40',
      '--out',
      join(mkdtempSync(join(tmpdir(), 'crl-run-')), 'x.jsonl'),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Raise compactThreshold to \d+.*\n.*--threshold/s);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('lists the run command in --help', () => {
    const r = crl(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('run [options]');
  });
});

describe('parseSummaryWriter', () => {
  it('accepts the four writers and rejects anything else', () => {
    expect(parseSummaryWriter('lossy:0.25')).toEqual({ kind: 'lossy', p: 0.25 });
    expect(parseSummaryWriter('oracle')).toEqual({ kind: 'oracle' });
    expect(() => parseSummaryWriter('lossy:')).toThrow(/--summary-writer/);
    expect(() => parseSummaryWriter('human')).toThrow(/--summary-writer/);
  });
});

describe('crl run flag errors (in process)', () => {
  /** Parses argv with the real program; returns the exit code and what reportError printed. */
  async function errorOf(args: string[]): Promise<{ code: number; text: string }> {
    let text = '';
    const sink = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
    try {
      await buildProgram()
        .exitOverride()
        .parseAsync(['node', 'crl', 'run', ...args, '--out', join(mkdtempSync(join(tmpdir(), 'crl-run-')), 'x.jsonl')]);
    } catch (e) {
      return { code: reportError(e, sink), text };
    }
    throw new Error('expected an error');
  }

  it.each([
    [['--env', 'no-such-env'], /valid names: .*chunk-sum/],
    [['--env', 'chunk-sum', '--episodes', 'many'], /--episodes/],
    [['--env', 'chunk-sum', '--windows', '0'], /--windows/],
    [['--env', 'chunk-sum', '--summary-writer', 'lossy:2'], /--summary-writer/],
    [['--env', 'chunk-sum', '--policy', '/no/such/dir'], /--policy/],
  ] as [string[], RegExp][])('%j is a user error naming the flag', async (args, message) => {
    const { code, text } = await errorOf(args);
    expect(code).toBe(2);
    expect(text).toMatch(message);
    expect(text).not.toMatch(/\n\s+at /);
  });
});
