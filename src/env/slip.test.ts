import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../contracts/index.ts';
import { Rng } from '../util/random.ts';
import { getFamily } from './registry.ts';
import { slippingExpert } from './slip.ts';

const chat = (...turns: [ChatMessage['role'], string][]): ChatMessage[] =>
  turns.map(([role, content]) => ({ role, content }));

describe('family slips', () => {
  it('kv-ledger: one answered value becomes another value in view; no slip before the answer', () => {
    const kv = getFamily('kv-ledger');
    const m = chat(['user', 'queries a'], ['assistant', 'read'], ['observation', 'set a 5 set b 9 end']);
    expect(kv.sft!.slip!('answer 5', m, new Rng(1))).toBe('answer 9');
    expect(kv.sft!.slip!('read', m, new Rng(1))).toBeUndefined();
    expect(kv.sft!.slip!('answer none', m, new Rng(1))).toBeUndefined();
    // keyed answers keep their keys; with no other value in view, any other value word
    const w = chat(['user', 'queries a'], ['assistant', 'read'], ['observation', 'set a tiger end']);
    const slipped = kv.sft!.slip!('answer a tiger', w, new Rng(2))!.split(' ');
    expect(slipped.slice(0, 2)).toEqual(['answer', 'a']);
    expect(slipped[2]).not.toBe('tiger');
  });

  it('hop-search: one answer becomes another entity of the opened documents', () => {
    const hop = getFamily('hop-search');
    const m = chat(
      ['user', 'question q boss answer'],
      ['assistant', 'open 3'],
      ['observation', 'doc 3 : q boss e . k pet m'],
    );
    const out = new Set(Array.from({ length: 20 }, (_, i) => hop.sft!.slip!('answer e', m, new Rng(i))));
    expect([...out].sort()).toEqual(['answer k', 'answer m', 'answer q']);
  });

  it('fog-courier: done instead of the drop, nothing else', () => {
    const fog = getFamily('fog-courier');
    expect(fog.sft!.slip!('drop key', [], new Rng(0))).toBe('done');
    expect(fog.sft!.slip!('go north', [], new Rng(0))).toBeUndefined();
  });

  it('slippingExpert(p = 0) is the expert itself; at p the success rate of expert episodes drops by about p', async () => {
    const kv = getFamily('kv-ledger');
    expect(slippingExpert(kv, 0)).toBe(kv.expert);
    const rate = async (p: number): Promise<number> => {
      const rng = new Rng(7);
      let ok = 0;
      const n = 400;
      for (let i = 0; i < n; i++) {
        const env = kv.create({ chunks: 2, minChunks: 1 });
        const messages: ChatMessage[] = [{ role: 'user', content: (await env.reset(i)).instruction }];
        for (let t = 0; t < 50; t++) {
          const action = slippingExpert(kv, p)(messages, rng);
          const step = await env.step(action);
          messages.push({ role: 'assistant', content: action }, { role: 'observation', content: step.observation });
          if (step.done) {
            ok += step.reward;
            break;
          }
        }
      }
      return ok / n;
    };
    expect(await rate(0)).toBe(1);
    const slipped = await rate(0.3);
    expect(slipped).toBeGreaterThan(0.6);
    expect(slipped).toBeLessThan(0.8);
  });
});
