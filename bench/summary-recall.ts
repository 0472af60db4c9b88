/**
 * Summary recall diagnostic (docs/sft.md, "Dense warm-up in crl sft"): teacher-forced accuracy of
 * a policy on the NUMBER tokens of oracle summaries (kv-ledger: the values), split by the summary's
 * index in the episode. The first summary must find a value written several chunks back; later
 * ones can copy it from the summary in the window head, so the split separates long-range recall
 * from copying. Windows come from the scripted expert with oracle summaries on evaluation seeds.
 *
 *   node --import tsx bench/summary-recall.ts --env kv-ledger --knobs '{"queries":1,"overwriteRate":0}' RUN_OR_CKPT...
 *
 * --rollout '{"compactThreshold":160,"maxWindows":8}' sets the windows (earlier compaction = shorter lookups).
 * Last line: JSON { policy: { first: {n, acc, nll}, later: {...} } }. acc = p > 0.5 (so argmax).
 */
import { parseArgs } from 'node:util';
import { answerLoss, type Example } from '../src/experiments/sft/sft-loss.ts';
import { resolveCheckpointDir } from '../src/experiments/evaluate/policy-source.ts';
import { expertEpisodes } from '../src/experiments/sft/sft-data.ts';
import { getFamily } from '../src/env/registry.ts';
import { loadCheckpoint } from '../src/model/formats/checkpoint.ts';
import { loadTokenizer } from '../src/model/tokenizer/load-tokenizer.ts';
import { resolveRolloutConfig } from '../src/rollout/config.ts';
import { Rng } from '../src/util/random.ts';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: {
      env: { type: 'string', default: 'kv-ledger' },
      knobs: { type: 'string', default: '{}' },
      episodes: { type: 'string', default: '100' },
      rollout: { type: 'string', default: '{}' },
    },
    allowPositionals: true,
  });
  if (positionals.length === 0) throw new Error('give one or more run or checkpoint directories');
  const tokenizer = loadTokenizer('word');
  const family = getFamily(values.env);
  const { config: rollout, layout } = resolveRolloutConfig({ input: JSON.parse(values.rollout), tokenizer });
  const { episodes: records } = await expertEpisodes({
    family,
    knobs: JSON.parse(values.knobs) as Record<string, unknown>,
    rollout,
    layout,
    tokenizer,
    lossyP: 0,
    episodes: Number(values.episodes),
    seeds: family.evalSeeds,
    rng: new Rng(12345),
    idPrefix: 'recall',
  });
  const isNumber = (t: number) => /^\d+$/.test(tokenizer.tokenizer.decode([t]));
  const sets: Record<'first' | 'later', Example[]> = { first: [], later: [] };
  for (const r of records) {
    r.segments
      .filter((s) => s.kind === 'summary')
      .forEach((s, i) => {
        const answerAt = s.tokens.flatMap((t, p) => (s.lossMask[p] === 1 && isNumber(t) ? [p] : []));
        if (answerAt.length > 0)
          sets[i === 0 ? 'first' : 'later'].push({ tokens: Int32Array.from(s.tokens), answerAt });
      });
  }
  const out: Record<string, Record<string, { n: number; acc: number; nll: number }>> = {};
  for (const p of positionals) {
    const { policy } = await loadCheckpoint(resolveCheckpointDir(p));
    out[p] = {};
    for (const [k, batch] of Object.entries(sets)) {
      const r = batch.length ? answerLoss({ policy, batch, grad: false }) : { loss: Number.NaN, acc: Number.NaN };
      out[p][k] = { n: batch.length, acc: r.acc, nll: r.loss };
      console.log(
        `${p}  ${k.padEnd(5)} summaries ${String(batch.length).padStart(4)}  number-token acc ${r.acc.toFixed(3)}  nll ${r.loss.toFixed(3)}`,
      );
    }
  }
  console.log(JSON.stringify(out));
}

main().catch((e: unknown) => {
  console.error(`summary-recall: ${(e as Error).message}`);
  process.exit(2);
});
