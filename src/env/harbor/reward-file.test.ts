import { describe, expect, it } from 'vitest';
import { parseReward, parseRewardNumber, verdictOf } from './reward-file.ts';
import { newVerdictKey, signVerdict } from './verdict-key.ts';

describe('reward files', () => {
  it('reward.txt: a finite decimal number within ±1e6, nothing looser', () => {
    for (const [text, want] of [
      ['1\n', 1],
      [' 0.5 ', 0.5],
      ['-2', -2],
      ['.25', 0.25],
      ['1e-3', 0.001],
      ['+3.', 3],
    ] as const)
      expect(parseRewardNumber(text)).toBe(want);
    for (const text of ['0x10', '1e308', 'Infinity', 'NaN', '', '1_000', '0b1', '1 2', '2000000'])
      expect(parseRewardNumber(text)).toBeNull();
    expect(parseReward({ txt: '0x10\n', json: null })).toMatchObject({ reward: 0, source: 'invalid' });
    expect(parseReward({ txt: '0x10\n', json: null }).detail).toMatch(/^reward\.txt holds "0x10", not a decimal/);
  });

  it('reward.json: a number or a flat object of finite numbers', () => {
    expect(parseReward({ txt: null, json: '{"reward": 1, "speed": 0.5}' })).toEqual({
      reward: 1,
      source: 'reward.json',
    });
    expect(parseReward({ txt: null, json: '{"a": 1, "b": 0}' }).reward).toBe(0.5);
    expect(parseReward({ txt: null, json: '0.75' }).reward).toBe(0.75);
    for (const text of ['{"reward": 1e308}', '{"reward": 1, "note": "ok"}', '{"r": {"x": 1}}', '[1]', '{}', 'nope'])
      expect(parseReward({ txt: null, json: text }).source).toBe('invalid');
  });

  it('a reward that is not a number is reward 0, read as the verifier left it (the agent may have written it)', () => {
    const txt = Buffer.from('oops\n');
    expect(verdictOf({ txt, json: null, sig: null }, null)).toMatchObject({ reward: 0, source: 'invalid' });
  });

  it("a signed verdict counts only with the HMAC of reward.txt's exact bytes under this key", () => {
    const key = newVerdictKey();
    const txt = Buffer.from('1\n');
    const sig = Buffer.from(signVerdict(key, txt));
    expect(sig.toString()).toMatch(/^[0-9a-f]{64}\n$/);
    expect(verdictOf({ txt, json: null, sig }, key)).toEqual({ reward: 1, source: 'reward.txt' });
    expect(verdictOf({ txt, json: null, sig: Buffer.from(sig.toString().trim()) }, key).reward).toBe(1);
    const zero = (files: Parameters<typeof verdictOf>[0]) => verdictOf(files, key);
    expect(zero({ txt, json: null, sig: null })).toMatchObject({ reward: 0, source: 'unsigned' });
    expect(zero({ txt: Buffer.from('1'), json: null, sig })).toMatchObject({ reward: 0, source: 'unsigned' });
    expect(zero({ txt, json: null, sig: Buffer.from(signVerdict(newVerdictKey(), txt)) }).reward).toBe(0);
    expect(zero({ txt, json: null, sig: Buffer.from(sig.toString().toUpperCase()) }).reward).toBe(0);
    expect(zero({ txt: null, json: Buffer.from('{"reward": 1}'), sig }).reward).toBe(0);
    // A signed verdict that is not a number is still no reward.
    const bad = Buffer.from('lots\n');
    expect(zero({ txt: bad, json: null, sig: Buffer.from(signVerdict(key, bad)) })).toMatchObject({
      reward: 0,
      source: 'invalid',
    });
  });
});
