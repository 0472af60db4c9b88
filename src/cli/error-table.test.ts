/**
 * The CLI's user mistakes, each run as a real `crl` process: exit 2, one short paragraph, no stack;
 * then internal errors, which must say so. One file over 300 lines on purpose: the table is the
 * point (one case per mistake, read side by side), and the cases share fixtures built once.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint, saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { Rng } from '../util/random.ts';
import { waitFor } from '../util/testing/wait-for.ts';
import { reportError } from './errors.ts';
import { CRL_BIN, crlAsync, type CrlOptions, type CrlResult } from './testing/spawn-crl.ts';

/**
 * The real `crl` process, asynchronous so the table's cases run side by side (in the OS temporary
 * directory); a case may take minutes of wall time on a loaded machine (the describe's timeout).
 */
function crl(args: string[], options: CrlOptions = {}): Promise<CrlResult> {
  return crlAsync(args, { cwd: tmpdir(), timeoutMs: 240_000, ...options });
}

/** A user error: exit 2, one short paragraph that names what to change, no stack trace. */
function expectUserError(r: CrlResult, message: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at |internal error/);
  expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(8);
}

const tmp = (name: string) => mkdtempSync(join(tmpdir(), `crl-${name}-`));
const TINY_RUN = ['--env', 'chunk-sum', '--model', 'tiny', '--batch', '1', '--iterations', '1'];

// Cases run side by side; on a loaded machine one case can take minutes of wall time.
describe.concurrent('the CLI error table (real crl processes)', { timeout: 300_000 }, () => {
  let ckpt: string;
  let nanCkpt: string;
  let finished: string;

  beforeAll(async () => {
    const root = tmp('fixtures');
    const tokenizer = new WordTokenizer();
    ckpt = join(root, 'ckpt');
    await saveCheckpoint(ckpt, {
      policy: new PolicyModel({
        config: modelConfig('tiny', { vocabSize: tokenizer.vocabSize, maxSeqLen: 256 }),
        optim: DEFAULT_OPTIMIZER,
        rng: new Rng(3),
      }),
    });
    const { policy } = await loadCheckpoint(ckpt);
    policy.net.params.fill(Number.NaN); // what a diverged run saves
    nanCkpt = join(root, 'nan');
    await saveCheckpoint(nanCkpt, { policy });
    finished = join(root, 'finished');
    const r = await crl(['train', ...TINY_RUN, '--from-scratch', '--out', finished]);
    expect(r.code, r.stderr).toBe(0);
  });

  it('--help exits 0; a bad option or a missing one exits 2', async () => {
    const [help, unknown, missing] = await Promise.all([
      crl(['sft', '--help']),
      crl(['report', '--bogus', 'x']),
      crl(['run', '--out', 'x.jsonl']),
    ]);
    expect(help.code).toBe(0);
    expectUserError(unknown, /unknown option '--bogus'/);
    expectUserError(missing, /required option '--env <name>'/);
  });

  it('sft --env nope / --knobs {"zzz":1} / --model nope: user errors, and no run directory', async () => {
    const dir = tmp('sft-bad');
    const [env, knobs, model, trainModel, init, bounds] = await Promise.all([
      crl(['sft', '--env', 'nope', '--out', join(dir, 'a')]),
      crl(['sft', '--knobs', '{"zzz":1}', '--out', join(dir, 'b')]),
      crl(['sft', '--model', 'nope', '--out', join(dir, 'c')]),
      crl(['train', ...TINY_RUN, '--model', 'nope', '--from-scratch', '--out', join(dir, 'd')]),
      crl(['sft', '--init', join(dir, 'no-such-base'), '--out', join(dir, 'e')]),
      crl(['sft', '--max-faults', '2', '--lossy-p', '3', '--dense-steps', '-1', '--out', join(dir, 'f')]),
    ]);
    // Each refused value names the flag that set it, as crl train's do.
    expectUserError(bounds, /faults\.maxFraction: .*<=1 \(--max-faults\)/);
    expectUserError(bounds, /lossyP: .*<=1 \(--lossy-p\)/);
    expectUserError(bounds, /dense\.steps: .*>=0 \(--dense-steps\)/);
    expectUserError(init, /no-such-base: no such checkpoint or model directory/);
    expectUserError(env, /--env: unknown environment "nope"; valid names: .*kv-ledger/);
    expectUserError(knobs, /--knobs: [\s\S]*"zzz"/);
    expectUserError(model, /model\.preset: unknown model preset "nope"; valid presets: .*tiny/);
    expectUserError(trainModel, /model\.preset: unknown model preset "nope".*\(--model\)/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('crl train with a bad budget or --init leaves no directory, so the same --out works once fixed', async () => {
    const dir = tmp('train-bad');
    const [budget, init] = await Promise.all([
      crl(['train', ...TINY_RUN, '--from-scratch', '--batch', '0', '--out', join(dir, 'a')]),
      crl(['train', ...TINY_RUN, '--init', join(dir, 'no-such-base'), '--out', join(dir, 'b')]),
    ]);
    expectUserError(budget, /batchEpisodes: .*\(--batch\)/);
    expectUserError(init, /no-such-base/);
    expect(readdirSync(dir)).toEqual([]);
    const [both, engine] = await Promise.all([
      crl(['train', ...TINY_RUN, '--init', ckpt, '--from-scratch', '--out', join(dir, 'c')]),
      // An engine that is not there is found before the run starts: nothing left behind.
      crl(['train', ...TINY_RUN, '--init', ckpt, '--engine-url', 'http://127.0.0.1:9', '--out', join(dir, 'e')]),
    ]);
    expectUserError(both, /--init and --from-scratch contradict/);
    expectUserError(engine, /cannot reach the engine .*is it running at http:\/\/127\.0\.0\.1:9/);
    expect(readdirSync(dir)).toEqual([]);
    const fixed = await crl(['train', ...TINY_RUN, '--init', ckpt, '--out', join(dir, 'b')]);
    expect(fixed.code, fixed.stderr).toBe(0);
  });

  it('crl train --lora-*: a rank of 0 or above a matrix, an unknown module, alpha alone: the flag named, nothing written', async () => {
    const dir = tmp('lora-bad');
    const lora = (out: string, ...flags: string[]) =>
      crl(['train', ...TINY_RUN, '--init', ckpt, ...flags, '--out', join(dir, out)]);
    const [zero, wide, module, alone] = await Promise.all([
      lora('a', '--lora-rank', '0'),
      lora('b', '--lora-rank', '17'),
      lora('c', '--lora-rank', '2', '--lora-targets', 'q_proj,qq_proj'),
      lora('d', '--lora-alpha', '4'),
    ]);
    expectUserError(zero, /model\.lora\.rank: .*>0 \(--lora-rank\)/);
    expectUserError(
      wide,
      /model\.lora\.rank: 17 is above the smaller side of q_proj \[16, 16\] \(--lora-rank takes 1 to 16/,
    );
    expectUserError(module, /model\.lora\.targets\.1: must be one of "q_proj", .*"down_proj" \(--lora-targets\)/);
    expectUserError(alone, /model\.lora\.rank: .* \(--lora-rank\)/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('crl train with no flags refuses to start RL from random weights, and writes nothing', async () => {
    const cwd = tmp('train-none');
    expectUserError(await crl(['train'], { cwd }), /--init .*crl sft.*--from-scratch/);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('--episodes -3 says what the number must be', async () => {
    const dir = tmp('episodes');
    expectUserError(
      await crl(['run', '--env', 'chunk-sum', '--episodes', '-3', '--out', join(dir, 'x.jsonl')]),
      /--episodes: must be 1 or more \(got "-3"\)/,
    );
  });

  it('--out under /proc fails at once instead of hanging in mkdir (run, sft, train, reproduce)', async () => {
    const timeoutMs = 100_000; // generous for a loaded machine; a hang never ends
    const [r, sft, rl, pipeline] = await Promise.all([
      crl(['run', '--env', 'chunk-sum', '--episodes', '1', '--out', '/proc/nope/x.jsonl'], { timeoutMs }),
      crl(['sft', '--env', 'chunk-sum', '--model', 'tiny', '--out', '/proc/nope/s'], { timeoutMs }),
      crl(['train', ...TINY_RUN, '--from-scratch', '--out', '/proc/nope/t'], { timeoutMs }),
      crl(['reproduce', '--preset', 'smoke', '--out', '/proc/nope/r'], { timeoutMs }),
    ]);
    expectUserError(r, /--out \/proc\/nope\/x\.jsonl: the directory \/proc\/nope cannot be created/);
    for (const x of [sft, rl, pipeline]) expectUserError(x, /cannot mkdir \/proc\/nope: no such file or directory/);
  });

  it('a directory, a read-only file, a read-only directory or a run file as --out: user errors, nothing written', async () => {
    const dir = tmp('out-bad');
    writeFileSync(join(dir, 'ro.jsonl'), 'keep\n');
    chmodSync(join(dir, 'ro.jsonl'), 0o444);
    mkdirSync(join(dir, 'ro-dir'));
    chmodSync(join(dir, 'ro-dir'), 0o555);
    const run = (out: string, ...extra: string[]) =>
      crl(['run', '--env', 'chunk-sum', '--episodes', '1', '--out', out, ...extra]);
    const [isDir, roFile, roDir, runFile] = await Promise.all([
      run(dir),
      run(join(dir, 'ro.jsonl'), '--force'),
      run(join(dir, 'ro-dir', 'x.jsonl')),
      run(join(finished, 'config.json'), '--force'),
    ]);
    expectUserError(isDir, /is a directory; name a file/);
    expectUserError(roFile, /ro\.jsonl is read-only/);
    expectUserError(roDir, /the directory .*ro-dir is not writable/);
    expectUserError(runFile, /is a file of the run directory/);
    expect(readFileSync(join(dir, 'ro.jsonl'), 'utf8')).toBe('keep\n');
    expect(readdirSync(join(dir, 'ro-dir'))).toEqual([]);
  });

  it('an existing --out is refused without --force, and a failing run leaves it byte-identical (exit 2)', async () => {
    const dir = tmp('out-keep');
    const out = join(dir, 'eps.jsonl');
    const before = '{"an":"earlier record"}\n';
    writeFileSync(out, before);
    const args = ['run', '--env', 'kv-ledger', '--episodes', '2', '--out', out];
    const [exists, engine, nan] = await Promise.all([
      crl(args),
      crl([...args, '--policy', 'vllm:http://127.0.0.1:9', '--force']),
      crl([...args, '--policy', nanCkpt, '--force']),
    ]);
    expectUserError(exists, /already exists; pass --force/);
    expectUserError(engine, /cannot reach the engine/);
    expectUserError(nan, /non-finite values .* use an earlier checkpoint/);
    expect(readFileSync(out, 'utf8')).toBe(before);
    expect(readdirSync(dir)).toEqual(['eps.jsonl']); // no partial file left behind
  });

  it('crl eval and crl report refuse an existing output without --force; a failing eval leaves it byte-identical', async () => {
    const dir = tmp('eval-keep');
    const out = join(dir, 'eval.json');
    writeFileSync(out, '{"an":"earlier result"}\n');
    mkdirSync(join(dir, 'rep'));
    writeFileSync(join(dir, 'rep', 'report.md'), 'earlier report\n');
    const ev = ['eval', '--env', 'chunk-sum', '--tasks', '1', '--samples', '1', '--windows', '1', '--out', out];
    const [exists, engine, nan, report] = await Promise.all([
      crl([...ev, '--policy', 'expert']),
      crl([...ev, '--policy', 'vllm:http://127.0.0.1:9', '--force']),
      crl([...ev, '--policy', nanCkpt, '--force']),
      crl(['report', finished, '--out', join(dir, 'rep')]),
    ]);
    expectUserError(exists, /--out .*eval\.json already exists; pass --force/);
    expectUserError(engine, /cannot reach the engine/);
    expectUserError(nan, /non-finite values .* use an earlier checkpoint/);
    expectUserError(report, /--out .*rep already holds report\.md; pass --force/);
    expect(readFileSync(out, 'utf8')).toBe('{"an":"earlier result"}\n');
    expect(readFileSync(join(dir, 'rep', 'report.md'), 'utf8')).toBe('earlier report\n');
    expect(readdirSync(dir).sort()).toEqual(['eval.json', 'rep']);
    const forced = await crl([...ev, '--policy', 'expert', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toHaveProperty('modes');
  });

  it('crl reproduce refuses an --out that holds something other than a pipeline, and leaves it alone', async () => {
    const before = readdirSync(finished).sort();
    expectUserError(
      await crl(['reproduce', '--preset', 'smoke', '--out', finished]),
      /is not a crl reproduce directory \(no pipeline\.json\); choose a new or empty directory/,
    );
    expect(readdirSync(finished).sort()).toEqual(before);
  });

  it('Ctrl-C during crl run: exit 130, --out as it was, the finished episodes in the partial file, and a message saying so', async () => {
    const dir = tmp('interrupt');
    const out = join(dir, 'eps.jsonl');
    writeFileSync(out, 'before\n');
    const args = ['run', '--env', 'kv-ledger', '--policy', ckpt, '--episodes', '2000', '--concurrency', '1'];
    const child = spawn(CRL_BIN, [...args, '--out', out, '--force'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const partial = join(dir, `eps.jsonl.partial-${child.pid}`);
    try {
      await waitFor(() => existsSync(partial) && readFileSync(partial, 'utf8').includes('\n'), {
        what: 'the first finished episode in the partial file',
        timeoutMs: 200_000,
        intervalMs: 100,
      });
    } finally {
      child.kill('SIGINT');
    }
    const code = await new Promise((r) => child.on('close', (c) => r(c)));
    expect(code, stderr).toBe(130);
    const kept = readFileSync(partial, 'utf8').split('\n').filter(Boolean);
    expect(kept.length).toBeGreaterThan(0);
    for (const line of kept) expect(JSON.parse(line)).toHaveProperty('episodeId');
    expect(readFileSync(out, 'utf8')).toBe('before\n');
    expect(stderr).toContain(`the run was interrupted after ${kept.length} episodes; their records are in ${partial}`);
    expect(stderr).toMatch(/crl: interrupted \(SIGINT\)\n$/);
  });

  it('crl report on an empty or missing directory, or with --training-windows abc: user errors, nothing created', async () => {
    const dir = tmp('report');
    mkdirSync(join(dir, 'empty'));
    const [empty, missing, k] = await Promise.all([
      crl(['report', join(dir, 'empty')]),
      crl(['report', join(dir, 'missing')]),
      crl(['report', finished, '--training-windows', 'abc']),
    ]);
    expectUserError(empty, /found no runs in .*empty/);
    expectUserError(missing, /missing is not a directory/);
    expectUserError(k, /--training-windows: expected a whole number .* got "abc"/);
    expect(readdirSync(dir)).toEqual(['empty']);
    expect(readdirSync(join(dir, 'empty'))).toEqual([]);
    expect(existsSync(join(finished, 'report'))).toBe(false);
  });

  it('resuming a finished run says so and exits 0 with the summary line', async () => {
    const r = await crl(['train', '--resume', finished]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/already finished all 1 iterations; nothing to resume/);
    expect(r.stderr).not.toMatch(/starting at iteration/);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({ iteration: 1 });
  });

  it('crl sft on an existing run with other settings is refused with the difference; with none it resumes', async () => {
    const dir = tmp('sft-resume');
    const base = [
      'sft',
      '--env',
      'chunk-sum',
      '--model',
      'tiny',
      '--episodes',
      '1',
      '--epochs',
      '1',
      '--held-out',
      '0',
    ];
    const first = await crl([...base, '--out', join(dir, 'b')]);
    expect(first.code, first.stderr).toBe(0);
    const config = readFileSync(join(dir, 'b', 'config.json'), 'utf8');
    const [other, none, train, resumeAsRl] = await Promise.all([
      crl(['sft', '--env', 'kv-ledger', '--model', 'tiny', '--out', join(dir, 'b')]),
      crl(['sft', '--out', join(dir, 'b')]),
      crl(['sft', '--out', finished]),
      crl(['train', '--resume', join(dir, 'b')]),
    ]);
    expectUserError(resumeAsRl, /holds an SFT run \(crl sft\), not an RL run: continue it with crl sft --out/);
    expectUserError(other, /other settings:\n\s+- env\.name: stored "chunk-sum", now "kv-ledger"/);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stderr).toMatch(/resuming .* with its stored config/);
    expectUserError(train, /holds a compaction-rl run, not an SFT run/);
    expect(readFileSync(join(dir, 'b', 'config.json'), 'utf8')).toBe(config);
  });
});

describe('internal errors', () => {
  it('exit 1, say "internal error" and where to report, without a stack unless CRL_DEBUG', () => {
    let text = '';
    const sink = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
    const debug = process.env.CRL_DEBUG;
    delete process.env.CRL_DEBUG;
    try {
      expect(reportError(new TypeError('x is undefined'), sink)).toBe(1);
    } finally {
      if (debug !== undefined) process.env.CRL_DEBUG = debug;
    }
    expect(text).toMatch(/^crl: internal error: x is undefined\nThis is a bug in crl.*report it/);
    expect(text).not.toMatch(/\n\s+at /);
  });
});
