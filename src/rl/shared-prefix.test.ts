import { describe, expect, it } from 'vitest';
import { Rng } from '../util/random.ts';
import { ppoUpdate, type PpoSegment } from './ppo-update.ts';
import { recomputeOld } from './recompute-old.ts';
import { mergedBatch, prefixGroups, segmentTokens, toMembers, toSequences } from './shared-prefix.ts';
import { TabularCritic, TabularPolicy } from './testing/tabular-models.ts';
import type { TrainablePolicy } from '../contracts/index.ts';

const seq = (...xs: number[]) => Int32Array.from(xs);

describe('prefixGroups: an execution segment and the summary that repeats its window (method §3)', () => {
  it('groups each run of segments that extend the previous one, and nothing when merge is off', () => {
    const tokens = [seq(0, 1, 2), seq(0, 1, 2, 3, 1), seq(0, 2), seq(0, 2, 1), seq(0, 2, 1, 3), seq(1, 1), seq(0, 1)];
    expect(prefixGroups({ tokens, merge: true })).toEqual([[0, 1], [2, 3, 4], [5], [6]]);
    expect(prefixGroups({ tokens, merge: false })).toEqual([[0], [1], [2], [3], [4], [5], [6]]);
    // A minibatch budget counts the group's segment tokens, not its carrier's.
    expect(segmentTokens({ groups: prefixGroups({ tokens, merge: true }), tokens })).toEqual([8, 9, 2, 2]);
  });

  it('spreads carrier outputs to members and adds member gradients back position by position', () => {
    const tokens = [seq(0, 1), seq(0, 1, 2, 3), seq(3, 3, 3)];
    const batch = mergedBatch({ groups: prefixGroups({ tokens, merge: true }), tokens });
    expect(batch.sequences).toEqual([tokens[1], tokens[2]]);
    expect(batch.segments).toEqual([0, 1, 2]);
    const members = toMembers({ perSequence: [Float32Array.from([0, 1, 2, 3]), Float32Array.from([0, 5, 6])], batch });
    expect(members.map((m) => Array.from(m))).toEqual([
      [0, 1],
      [0, 1, 2, 3],
      [0, 5, 6],
    ]);
    const g = [Float32Array.from([0, 10]), Float32Array.from([0, 1, 2, 3]), Float32Array.from([0, 7, 8])];
    const seqs = toSequences({ perMember: g, batch });
    expect(seqs.map((s) => Array.from(s))).toEqual([
      [0, 11, 2, 3],
      [0, 7, 8],
    ]);
    expect(seqs[1]).toBe(g[2]); // a segment alone passes through untouched
    expect(() => toSequences({ perMember: g.slice(1), batch })).toThrow(/2 gradient arrays for 3 segments/);
  });
});

/** exec_j / sum_j pairs as a rollout records them: sum repeats exec's window, then q_sum (3) and a summary. */
function pairs(rng: Rng, n: number): { tokens: Int32Array; lossMask: Uint8Array; kind: 'execution' | 'summary' }[] {
  const out: { tokens: Int32Array; lossMask: Uint8Array; kind: 'execution' | 'summary' }[] = [];
  for (let i = 0; i < n; i++) {
    const exec = [0, ...Array.from({ length: 3 + rng.int(4) }, () => 1 + rng.int(2))];
    const sum = [...exec, 3, ...Array.from({ length: 1 + rng.int(3) }, () => 1 + rng.int(2))];
    out.push({ kind: 'execution', tokens: Int32Array.from(exec), lossMask: Uint8Array.from(exec, (_, t) => +(t > 0)) });
    out.push({
      kind: 'summary',
      tokens: Int32Array.from(sum),
      lossMask: Uint8Array.from(sum, (_, t) => +(t > exec.length)),
    });
  }
  return out;
}

describe('ppoUpdate on merged sequences', () => {
  it('never runs an execution segment alone, and a pair never straddles two minibatches', () => {
    const policy = new TabularPolicy({ vocab: 4, lr: 0.1 });
    const critic = new TabularCritic({ vocab: 4, lr: 0.1 });
    const raw = pairs(new Rng(1), 6);
    const old = recomputeOld({ segments: raw, policy, critic, batchTokens: 8 });
    const segments: PpoSegment[] = raw.map((s, i) => ({
      ...s,
      oldLogprobs: old.oldLogprobs[i]!,
      oldValues: old.oldValues![i]!,
      advantages: Float32Array.from(s.tokens, (_, t) => Math.sin(i + t)),
      returns: new Float32Array(s.tokens.length),
    }));
    const seen: Int32Array[][] = [];
    const spy: TrainablePolicy = {
      forward: (tokens, o) => {
        seen.push([...tokens]);
        return policy.forward(tokens, o);
      },
      backward: (g) => policy.backward(g),
      step: () => policy.step(),
    };
    const config = { epochs: 2, minibatchTokens: 20, criticWarmupIterations: 0, criticUpdatesPerPolicyUpdate: 1 };
    const m = ppoUpdate({ segments, policy: spy, critic, config, iteration: 1, rng: new Rng(2) });
    const summaries = new Set(raw.filter((s) => s.kind === 'summary').map((s) => s.tokens));
    expect(seen.length).toBe(m['train/policy_steps']);
    expect(seen.flat().every((t) => summaries.has(t))).toBe(true); // every sequence run is a summary carrier
    expect(seen.flat().length).toBe(2 * 6); // each pair once per epoch
    expect(m['tokens/execution']).toBe(
      raw.filter((s) => s.kind === 'execution').reduce((a, s) => a + s.tokens.length - 1, 0),
    );
  });

  it('gives the update of the separate computation (same minibatch, tabular models, 1e-6)', () => {
    const run = (mergePrefixes: boolean) => {
      const policy = new TabularPolicy({ vocab: 4, lr: 0.3 });
      policy.logits.set(Array.from({ length: 16 }, (_, i) => Math.cos(i)));
      const critic = new TabularCritic({ vocab: 4, lr: 0.3 });
      const raw = pairs(new Rng(3), 4);
      const old = recomputeOld({ segments: raw, policy, critic, batchTokens: 1000, mergePrefixes });
      const segments: PpoSegment[] = raw.map((s, i) => ({
        ...s,
        oldLogprobs: old.oldLogprobs[i]!,
        oldValues: old.oldValues![i]!,
        advantages: Float32Array.from(s.tokens, (_, t) => Math.sin(3 * i + t)),
        returns: Float32Array.from(s.tokens, (_, t) => Math.cos(i - t)),
      }));
      const config = { epochs: 3, minibatchTokens: 1000, criticWarmupIterations: 0, mergePrefixes };
      const m = ppoUpdate({ segments, policy, critic, config, iteration: 1, rng: new Rng(4) });
      return { m, logits: Array.from(policy.logits), table: Array.from(critic.table) };
    };
    const a = run(true);
    const b = run(false);
    const diff = (x: number[], y: number[]) => Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
    expect(diff(a.logits, b.logits)).toBeLessThan(1e-6);
    expect(diff(a.table, b.table)).toBeLessThan(1e-6);
    for (const k of ['loss/policy', 'loss/value', 'policy/entropy', 'policy/approx_kl', 'optim/grad_norm'])
      expect(Math.abs(a.m[k]! - b.m[k]!)).toBeLessThan(1e-6);
  });
});
