/**
 * --precision on the commands that sample with the embedded engine: crl run reads a checkpoint's
 * matrices in the precision asked for (the records' logprobs change with it, the seed being the
 * same), a bad value is a clear error naming the valid ones, and crl serve's sampler takes it
 * ('auto' keeps a small model in f32; half-precision-sampling.test.ts checks the threshold).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { scrambleWeights } from '../model/network/test-helpers.ts';
import { WordTokenizer } from '../model/tokenizer/tokenizer.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { readRecordsFile } from '../rollout/record-file.ts';
import { serveCheckpoint } from '../serve/serve-checkpoint.ts';
import { Rng } from '../util/random.ts';
import { parseRunFlags } from './run-flags.ts';
import { crl } from './testing/spawn-crl.ts';

async function checkpoint(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'crl-precision-'));
  const config = modelConfig('tiny', { vocabSize: new WordTokenizer().vocabSize, maxSeqLen: 256 });
  const policy = new PolicyModel({ config, optim: DEFAULT_OPTIMIZER, rng: new Rng(1) });
  scrambleWeights(policy.net, 2); // O(1) weights: rounding them moves the logprobs visibly
  await saveCheckpoint(dir, { policy });
  return dir;
}

/** Every generated token's logprob of a 2-episode crl run at `precision`. */
function runLogprobs(dir: string, precision: string): (number | null)[] {
  const out = join(dir, `${precision}.jsonl`);
  const r = crl([
    'run',
    '--env',
    'chunk-sum',
    '--policy',
    dir,
    '--episodes',
    '2',
    '--precision',
    precision,
    '--out',
    out,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return readRecordsFile(out).flatMap((rec) =>
    rec.segments.flatMap((seg) => seg.logprobs.filter((_, i) => seg.lossMask[i] === 1)),
  );
}

describe('--precision', () => {
  it('crl run samples with the weights in the precision asked for', async () => {
    const dir = await checkpoint();
    const exact = runLogprobs(dir, 'f32');
    const half = runLogprobs(dir, 'bf16');
    expect(half.length).toBeGreaterThan(0);
    expect(half).not.toEqual(exact);
  });

  it('names the valid values when given another', () => {
    expect(() => parseRunFlags({ env: 'chunk-sum', precision: 'f8', out: 'x.jsonl' })).toThrow(
      /^--precision: expected one of auto, f32, f16, bf16 \(got "f8"\)$/,
    );
    expect(parseRunFlags({ env: 'chunk-sum', out: 'x.jsonl' }).precision).toBe('auto');
  });

  it("crl serve's sampler reads its weights in the precision given ('auto': f32 for a small model)", async () => {
    const dir = await checkpoint();
    for (const [precision, expected] of [
      [undefined, 'f32'],
      ['f16', 'f16'],
    ] as const) {
      const served = await serveCheckpoint({ policy: dir, ...(precision ? { precision } : {}) });
      try {
        expect(served.precision).toBe(expected);
      } finally {
        await served.server.close();
      }
    }
  });
});
