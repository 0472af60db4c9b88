import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createContext, loadGgufModel, modelVocabSize, nextTokenLogprobs } from '../adapters/llamacpp.ts';
import { readRecordsFile } from '../rollout/record-file.ts';
import { crl } from './testing/spawn-crl.ts';

const root = mkdtempSync(join(tmpdir(), 'crl-export-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('crl export (spawned)', () => {
  const run = join(root, 'base');
  const gguf = join(root, 'policy.gguf');

  it('exports a checkpoint crl sft wrote; llama.cpp gives the log-probs crl run recorded', async () => {
    const sft = crl(['sft', '--env', 'chunk-sum', '--model', 'tiny', '--episodes', '2', '--epochs', '1', '--out', run]);
    expect(sft.code).toBe(0);
    const ex = crl(['export', '--policy', run, '--format', 'gguf', '--out', gguf]);
    expect(ex.stderr).not.toMatch(/\n\s+at /);
    expect(ex.code).toBe(0);
    expect(JSON.parse(ex.last)).toMatchObject({ format: 'gguf', out: gguf, precision: 'f32', architecture: 'llama' });
    const recordsPath = join(root, 'records.jsonl');
    const r = crl(['run', '--env', 'chunk-sum', '--policy', run, '--episodes', '3', '--out', recordsPath]);
    expect(r.code).toBe(0);
    const records = readRecordsFile(recordsPath);

    const model = await loadGgufModel(gguf);
    const context = await createContext({ model, contextSize: 256, sequences: 1 });
    const sequence = context.getSequence();
    const vocabSize = modelVocabSize(model);
    let max = 0;
    let compared = 0;
    for (const rec of records) {
      for (const seg of rec.segments) {
        const positions = seg.lossMask.flatMap((m, t) => (m === 1 && t > 0 ? [t - 1] : []));
        if (positions.length === 0) continue;
        const lps = await nextTokenLogprobs({ sequence, tokens: seg.tokens, positions, vocabSize });
        positions.forEach((p, i) => {
          max = Math.max(max, Math.abs(lps[i]![seg.tokens[p + 1]!]! - seg.logprobs[p + 1]!));
          compared++;
        });
      }
    }
    await context.dispose();
    await model.dispose();
    console.log(`crl run records vs llama.cpp: ${compared} sampled tokens, max |Δ log-prob| = ${max.toExponential(2)}`);
    expect(compared).toBeGreaterThan(20);
    expect(max).toBeLessThan(1e-3);
  });

  it('runs the GGUF file through llama.cpp in crl run (actor and summary writer) and crl eval, with the flags a checkpoint takes', () => {
    const records = join(root, 'llamacpp.jsonl');
    const r = crl(['run', '--env', 'chunk-sum', '--policy', `llamacpp:${gguf}`, '--episodes', '3', '--out', records]);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.last).episodes).toBe(3);
    const recs = readRecordsFile(records);
    expect(recs.flatMap((x) => x.segments.flatMap((s) => s.logprobs.filter((l) => l !== null))).length).toBeGreaterThan(
      20,
    );
    const w = crl([
      'run',
      '--env',
      'chunk-sum',
      '--policy',
      run,
      '--summary-writer',
      `llamacpp:${gguf}`,
      '--episodes',
      '2',
      '--windows',
      '3',
      '--out',
      join(root, 'writer.jsonl'),
    ]);
    expect(w.code).toBe(0);
    const flags = ['--env', 'chunk-sum', '--tasks', '2', '--samples', '4', '--windows', '1,4'];
    const dirEval = crl(['eval', '--policy', run, ...flags]);
    expect(dirEval.code).toBe(0);
    const ggufEval = crl(['eval', '--policy', `llamacpp:${gguf}`, ...flags]);
    expect(ggufEval.stderr).not.toMatch(/\n\s+at /);
    expect(ggufEval.code).toBe(0);
    const res = JSON.parse(ggufEval.last);
    expect(res.out).toBe(join(root, 'eval', 'policy-chunk-sum-default-self.json'));
    expect(Object.keys(res.modes)).toEqual(['x1', 'x4']);
    const bad = crl(['eval', '--policy', `llamacpp:${join(root, 'missing.gguf')}`, ...flags]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/no such GGUF file/);
  });

  it('writes a Hugging Face directory that crl run and crl sft --init read back', () => {
    const out = join(root, 'hf');
    const r = crl(['export', '--policy', run, '--format', 'hf', '--out', out]);
    expect(r.code).toBe(0);
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
      expect(existsSync(join(out, f))).toBe(true);
    // It names its tokenizer, so --policy / --init on it default to the word vocabulary again.
    expect(JSON.parse(readFileSync(join(out, 'crl_tokenizer.json'), 'utf8'))).toMatchObject({ name: 'word' });
    const cfg = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(cfg.architectures).toEqual(['LlamaForCausalLM']);
    // The directory is a policy source again: --policy of crl run, --init of crl sft.
    const r1 = crl(['run', '--env', 'chunk-sum', '--policy', out, '--episodes', '2', '--out', join(root, 'hf.jsonl')]);
    expect(r1.code).toBe(0);
    const sft = crl([
      'sft',
      '--env',
      'chunk-sum',
      '--init',
      out,
      '--episodes',
      '2',
      '--epochs',
      '1',
      '--out',
      join(root, 'from-hf'),
    ]);
    expect(sft.stderr).not.toMatch(/\n\s+at /);
    expect(sft.code).toBe(0);
    const config = JSON.parse(readFileSync(join(root, 'from-hf', 'config.json'), 'utf8'));
    expect(config.config.tokenizer).toBe('word');
  });

  it('rejects bad flags with exit 2 and one line, no stack', () => {
    for (const args of [
      ['--policy', join(root, 'nope'), '--format', 'gguf', '--out', join(root, 'x.gguf')],
      ['--policy', run, '--format', 'onnx', '--out', join(root, 'x.gguf')],
      ['--policy', run, '--format', 'hf', '--precision', 'f16', '--out', join(root, 'x')],
    ]) {
      const r = crl(['export', ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^crl: error: --/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
