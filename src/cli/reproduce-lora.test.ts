import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { latestCheckpoint } from '../experiments/runs/checkpoint-store.ts';
import { crl } from './testing/spawn-crl.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-rep-lora-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function latest(run: string): string {
  const found = latestCheckpoint(run);
  if (!found) throw new Error(`${run} has no checkpoint`);
  return found.dir;
}

describe('crl reproduce --lora-rank (spawned)', () => {
  it('trains the RL systems as adapters on a full-weight base at the lr given, records it, and keeps it on --resume', () => {
    const out = join(root, 'p');
    const r = crl([
      ...['reproduce', '--preset', 'smoke', '--systems', 'compaction-rl'],
      ...['--lora-rank', '4', '--policy-lr', '0.002', '--out', out],
    ]);
    expect(r.code, r.stderr).toBe(0);
    const pipeline = JSON.parse(readFileSync(join(out, 'pipeline.json'), 'utf8'));
    expect(pipeline.train.model.lora).toEqual({ rank: 4 });
    expect(pipeline.train.optim.policyLr).toBe(0.002);
    const stored = JSON.parse(
      readFileSync(join(out, 'systems', 'compaction-rl--chunk-sum--s0', 'config.json'), 'utf8'),
    );
    expect(stored.config.optim.policyLr).toBe(0.002);
    const rl = latest(join(out, 'systems', 'compaction-rl--chunk-sum--s0'));
    const peft = JSON.parse(readFileSync(join(rl, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    expect(peft).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8 });
    // The SFT base is a full fine-tune: the adapters start from it.
    expect(existsSync(join(latest(join(out, 'systems', 'base--chunk-sum--s0')), 'adapter_config.json'))).toBe(false);
    expect(Object.keys(JSON.parse(r.last).results).sort()).toEqual(['base', 'compaction-rl']);

    const again = crl(['reproduce', '--resume', out]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.last).results).toEqual(JSON.parse(r.last).results);
  });

  it('refuses a bad rank, alpha without rank, a LoRA flag on --resume and a bad lr, naming the flag', () => {
    const cases = [
      crl(['reproduce', '--preset', 'smoke', '--lora-rank', '0', '--out', join(root, 'a')]),
      crl(['reproduce', '--preset', 'smoke', '--lora-alpha', '8', '--out', join(root, 'b')]),
      crl(['reproduce', '--resume', join(root, 'p'), '--lora-rank', '8']),
      crl(['reproduce', '--preset', 'smoke', '--policy-lr', '0', '--out', join(root, 'c')]),
    ];
    expect(cases.map((c) => c.code)).toEqual([2, 2, 2, 2]);
    expect(cases[0]!.stderr).toContain('--lora-rank: expected a whole number >= 1');
    expect(cases[1]!.stderr).toContain('--lora-alpha needs --lora-rank');
    expect(cases[2]!.stderr).toContain('--lora-* and --policy-lr cannot change it');
    expect(cases[3]!.stderr).toContain('--policy-lr: expected a number > 0, got 0');
    for (const c of cases) expect(c.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(root, 'a'))).toBe(false);
  });
});
