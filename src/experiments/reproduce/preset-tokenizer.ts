import { scaleTokenCount, WORD_TOKEN_UNITS } from '../../rollout/config.ts';
import { getFamily } from '../../env/registry.ts';
import type { Preset } from './preset-types.ts';

const TOKEN_UNIT_KEYS = [
  'contextWindow',
  'compactThreshold',
  'summaryMaxTokens',
  'maxActionTokens',
  'maxObservationTokens',
] as const;

/**
 * A preset run with another tokenizer (`crl reproduce --tokenizer`): SFT and every training run
 * name it, and the token counts the preset fixes (C = 256 ...) are scaled as the rollout defaults
 * are for a subword tokenizer (rollout/config.ts SUBWORD_TOKEN_SCALE: a Qwen3 kv-ledger step is
 * 1.84x the word vocabulary's), so a window holds about as many steps. Each family's subwordKnobs
 * are set (kv-ledger writes its values as value words: a number is several subword tokens, and the
 * embedded model never learned to copy them; docs/tasks.md, "Value words").
 */
export function withTokenizer(preset: Preset, tokenizer: string): Preset {
  if (tokenizer === 'word') return preset;
  // Every token count is written out (the word defaults where the preset leaves one unset), so
  // whatever reads C from the preset (the 2x-context system, the evaluations) sees the scaled one.
  const scale = <T extends { rollout?: Record<string, unknown> }>(c: T, fill = true): T => ({
    ...c,
    rollout: Object.fromEntries(
      Object.entries({ ...(fill ? WORD_TOKEN_UNITS : {}), ...c.rollout }).map(([k, v]) => [
        k,
        (TOKEN_UNIT_KEYS as readonly string[]).includes(k) && typeof v === 'number' ? scaleTokenCount(v) : v,
      ]),
    ),
  });
  return {
    ...preset,
    tokenizer,
    ...subwordKnobs(preset),
    sft: {
      ...scale(preset.sft as { rollout?: Record<string, unknown> }),
      tokenizer,
      // The base's positions (2C for the 2x-context system) are token counts too.
      ...(preset.sft.model?.maxSeqLen
        ? { model: { ...preset.sft.model, maxSeqLen: scaleTokenCount(preset.sft.model.maxSeqLen) } }
        : {}),
    },
    ...(preset.sftByEnv
      ? {
          sftByEnv: Object.fromEntries(
            Object.entries(preset.sftByEnv).map(([env, o]) => [
              env,
              o.rollout ? scale(o as { rollout?: Record<string, unknown> }, false) : o,
            ]),
          ),
        }
      : {}),
    train: { ...scale(preset.train as { rollout?: Record<string, unknown> }), tokenizer },
  };
}

/** `{ knobs }` with every env's subwordKnobs merged in; nothing when no env of the preset has any. */
function subwordKnobs(preset: Preset): Pick<Preset, 'knobs'> {
  const extra = preset.envs.flatMap((env) => {
    const k = getFamily(env).subwordKnobs;
    return k ? [[env, { ...preset.knobs?.[env], ...k }] as const] : [];
  });
  return extra.length ? { knobs: { ...preset.knobs, ...Object.fromEntries(extra) } } : {};
}
