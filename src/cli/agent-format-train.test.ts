/**
 * A base made in the tools format trains in it (docs/agent-format.md): `crl sft` with
 * `--agent-format tools --thinking on` on Qwen3's tokenizer, then `crl train` with the same flags;
 * the run's metrics carry the format's per-iteration keys (reasoning tokens, tool-call errors) and
 * its records are tool calls.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crl } from './testing/spawn-crl.ts';

describe('crl sft then crl train in the tools format, thinking on', () => {
  it('trains, and metrics.jsonl has reasoning and tool-call keys', () => {
    const root = mkdtempSync(join(tmpdir(), 'crl-tools-train-'));
    const format = ['--env', 'kv-ledger', '--agent-format', 'tools', '--thinking', 'on'];
    const sft = crl(
      ['sft', ...format, '--model', 'tiny', '--tokenizer', 'qwen3', '--episodes', '8', '--epochs', '1'].concat([
        '--held-out',
        '0',
        '--seed',
        '1',
        '--out',
        join(root, 'base'),
      ]),
      { timeoutMs: 280_000 },
    );
    expect(sft.code, sft.stderr).toBe(0);
    const train = crl(
      ['train', ...format, '--init', join(root, 'base'), '--batch', '2', '--iterations', '1', '--seed', '1'].concat([
        '--out',
        join(root, 'run'),
      ]),
      { timeoutMs: 280_000 },
    );
    expect(train.code, train.stderr).toBe(0);
    const line = readFileSync(join(root, 'run', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')[0]!;
    const keys = Object.keys((JSON.parse(line) as { metrics: Record<string, number> }).metrics);
    expect(keys.some((k) => k.includes('reasoning'))).toBe(true);
    expect(keys.some((k) => k.includes('tool_call'))).toBe(true);
    expect(readdirSync(join(root, 'run'))).toContain('metrics.jsonl');
  }, 600_000);
});
