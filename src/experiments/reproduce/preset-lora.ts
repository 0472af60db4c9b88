import { LoraSectionSchema, type LoraSection } from '../../model/lora/lora-config.ts';
import type { Preset } from './preset-types.ts';

/**
 * A preset whose RL systems train LoRA adapters on the SFT base instead of every weight
 * (`crl reproduce --lora-rank R [--lora-alpha A]`, docs/lora.md). The base is trained as the preset
 * says (SFT is a full fine-tune: the adapters start from it), so the same base serves a full-update
 * and a LoRA pipeline and their RL systems compare paired on the same tasks. The setting is part of
 * every RL system's config, so pipeline.json and each run's config hash record it.
 */
export function withLora(preset: Preset, section: LoraSection): Preset {
  const lora = LoraSectionSchema.parse(section);
  const model = { ...(preset.train.model ?? {}), lora };
  return { ...preset, train: { ...preset.train, model } };
}
