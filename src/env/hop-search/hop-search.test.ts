import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WordTokenizer } from '../../model/tokenizer/tokenizer.ts';
import { KnobsError } from '../knobs.ts';
import { playDirect } from '../testing/direct-episode.ts';
import { docText } from './generate.ts';
import { generateHopSearch, HopSearchEnv, hopSearch, hopSearchKnobs, verifyHopSearch } from './index.ts';

const tok = new WordTokenizer();
const defaults = hopSearchKnobs.parse({});

describe('hop-search', () => {
  it('generates the same collection for the same seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000 }), (seed) => {
        expect(generateHopSearch(seed, defaults)).toEqual(generateHopSearch(seed, defaults));
      }),
      { numRuns: 50 },
    );
    expect(JSON.stringify(generateHopSearch(1, defaults))).not.toBe(JSON.stringify(generateHopSearch(2, defaults)));
  });

  it('one-key structure: distinct relations and subjects per doc, one fact per (subject, relation), one chain fact per doc', () => {
    for (const knobs of [defaults, ...Object.values(hopSearch.variants).map((v) => hopSearchKnobs.parse(v))]) {
      for (let seed = 0; seed < 100; seed++) {
        const task = generateHopSearch(seed, knobs);
        expect(task.docs.length).toBe(knobs.docs);
        for (const d of task.docs) {
          expect(d.facts.length).toBe(knobs.factsPerDoc);
          expect(new Set(d.facts.map((f) => f.rel)).size).toBe(d.facts.length);
          expect(new Set(d.facts.map((f) => f.subject)).size).toBe(d.facts.length);
        }
        const facts = task.docs.flatMap((d) => d.facts);
        const keys = facts.map((f) => `${f.subject} ${f.rel}`);
        expect(new Set(keys).size).toBe(keys.length);
        const rels = task.questions.flatMap((q) => q.rels);
        expect(new Set(rels).size).toBe(rels.length); // a relation names one hop of one question
        const chainDocs = new Set<number>();
        for (const q of task.questions) {
          let cur = q.entity;
          for (const rel of q.rels) {
            const doc = task.docs.find((d) => d.facts.some((f) => f.subject === cur && f.rel === rel))!;
            expect(doc.facts[0]).toMatchObject({ subject: cur, rel }); // the chain fact heads its document
            expect(chainDocs.has(doc.id)).toBe(false);
            chainDocs.add(doc.id);
            cur = doc.facts.find((f) => f.subject === cur && f.rel === rel)!.value;
          }
          expect(cur).toBe(q.answer);
        }
      }
    }
  });

  it('search lists the doc with that subject and relation; bad actions are answered, not thrown', () => {
    const env = new HopSearchEnv();
    env.reset(5);
    const task = env.current;
    const [q] = task.questions;
    const first = task.docs.find((d) => d.facts.some((f) => f.subject === q!.entity && f.rel === q!.rels[0]))!;
    expect(env.step(`search ${q!.entity} ${q!.rels[0]}`).observation).toBe(`results ${first.id}`);
    const absent = ['boss', 'friend', 'pet', 'home', 'rival', 'coach'].find(
      (r) => !task.docs.some((d) => d.facts.some((f) => f.subject === q!.answer && f.rel === r)),
    );
    if (absent) expect(env.step(`search ${q!.answer} ${absent}`).observation).toBe('results none');
    const opened = env.step(`open ${first.id}`).observation;
    expect(opened).toBe(docText(first));
    expect(opened).toMatch(new RegExp(`^doc ${first.id} : (.* \\. )?${q!.entity} ${q!.rels[0]} [a-z]( |$)`));
    for (const bad of [
      `search ${q!.entity}`,
      `search ${q!.entity} ${q!.rels[0]} 3`,
      'search boss q',
      'search q 3',
      'look',
    ])
      expect(env.step(bad).observation).toBe('invalid action');
    const unused = Array.from({ length: 64 }, (_, i) => i).find((i) => !task.docs.some((d) => d.id === i))!;
    expect(env.step(`open ${unused}`).observation).toBe('doc not found');
    expect(env.step(`answer ${q!.answer}`)).toEqual({ observation: 'correct', done: true, reward: 1 });
  });

  it('the expert (one unbounded window) is always right; perturbed answers are rejected', () => {
    for (let seed = 0; seed < 60; seed++) {
      for (const variant of [{}, ...Object.values(hopSearch.variants)]) {
        const env = new HopSearchEnv(variant);
        const ep = playDirect({ env, seed, policy: hopSearch.expert });
        expect(ep.reward).toBe(1);
        const hops = env.current.questions[0]!.rels.length; // drawn per task from minHops..hops
        expect(hops).toBeGreaterThanOrEqual(env.knobs.minHops);
        expect(hops).toBeLessThanOrEqual(env.knobs.hops);
        expect(ep.actions.length).toBe(2 * env.knobs.questions * hops + 1); // a search and an open per hop
        const answer = ep.actions[ep.actions.length - 1]!.split(' ').slice(1);
        expect(verifyHopSearch(env.current, answer)).toBe(true);
        const wrong = [...answer];
        wrong[0] = answer[0] === 'a' ? 'b' : 'a';
        expect(verifyHopSearch(env.current, wrong)).toBe(false);
        expect(verifyHopSearch(env.current, [...answer, 'a'])).toBe(false);
      }
    }
  });

  it('keeps observations <= 32 tokens and actions <= 11 (+ <eot>)', () => {
    const env = new HopSearchEnv({ factsPerDoc: 6, docs: 40, distractors: 30, questions: 3, hops: 2 });
    for (let seed = 0; seed < 30; seed++) {
      const ep = playDirect({ env, seed, policy: hopSearch.expert });
      for (const o of ep.observations) expect(tok.encode(o).length).toBeLessThanOrEqual(32);
      for (const a of ep.actions) expect(tok.encode(a).length).toBeLessThanOrEqual(11);
    }
  });

  it('rejects questions x hops > 6 (one relation word per hop) and unknown knobs', () => {
    expect(() => new HopSearchEnv({ questions: 2, hops: 4 })).toThrow(KnobsError);
    expect(() => new HopSearchEnv({ questions: 2, hops: 4 })).toThrow(/questions x hops must be <= 6/);
    expect(() => new HopSearchEnv({ rooms: 3 } as never)).toThrow(/rooms/);
  });
});
