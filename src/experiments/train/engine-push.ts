import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { EnginePool } from '../../adapters/engine-pool.ts';
import { saveCheckpoint } from '../../model/formats/checkpoint.ts';
import type { PolicyModel } from '../../model/network/policy.ts';
import { ensureDir } from '../../util/atomic-write.ts';
import type { LoraPolicy } from './lora-trainer-models.ts';

/**
 * How each policy version reaches the remote engines (TrainerModels.publish). The merged
 * weights, written to `<run>/engine-weights` and loaded through update_weights_from_disk, as any
 * run does; or, for a LoRA run whose engines load adapters (config engine.lora, docs/lora.md),
 * only the adapter: written to `<run>/engine-adapters/v<version>` (a few MB, no AdamW moments)
 * and loaded through vLLM's /v1/load_lora_adapter under a name that carries the version, which
 * every request then names (EnginePool.publishAdapter). 'auto' decides at the first push: when an
 * engine has no adapter API or refuses the adapter, the run pushes merged weights from then on and
 * says why. The two newest adapter directories are kept (the engines keep those two loaded, and
 * vLLM may reread an adapter from its path), older ones removed.
 */
export function enginePublisher(o: {
  engines: EnginePool;
  policy: PolicyModel;
  lora: LoraPolicy | null;
  /** config.engine.lora; absent: 'auto'. Adapters need the trainer's own pool: 'off' with a queue. */
  mode: 'auto' | 'on' | 'off';
  weightsDir: string;
  adaptersDir: string;
  token?: string;
  log?: (line: string) => void;
}): (version: number) => Promise<void> {
  let adapters = o.lora !== null && o.mode !== 'off';
  let first = true;
  let previous: string | null = null;
  const token = o.token ? { token: o.token } : {};
  return async (version) => {
    if (adapters) {
      const name = `v${version}`;
      const dir = join(o.adaptersDir, name);
      ensureDir(dir);
      o.lora!.writeForEngines(dir);
      const why = await o.engines.publishAdapter({
        path: dir,
        version: String(version),
        ...token,
        fallback: o.mode === 'auto' && first,
      });
      if (why === null) {
        if (first)
          o.log?.(
            `engine: pushing the LoRA adapter at each policy version (${mb(dirBytes(dir))} MB) instead of the merged weights (${mb(4 * o.policy.net.params.length)} MB)`,
          );
        first = false;
        for (const old of readdirSync(o.adaptersDir))
          if (old !== name && old !== previous) rmSync(join(o.adaptersDir, old), { recursive: true, force: true });
        previous = name;
        return;
      }
      adapters = false;
      rmSync(o.adaptersDir, { recursive: true, force: true });
      o.log?.(`engine: the engines take no LoRA adapter (${why}); pushing the merged weights instead`);
    }
    first = false;
    // Merged weights, which every engine loads (a LoRA run's adapter beside them).
    await saveCheckpoint(o.weightsDir, { policy: o.policy, ...(o.lora ? { adapter: o.lora.adapter } : {}) });
    await o.engines.publish({ modelPath: o.weightsDir, version: String(version), ...token });
  };
}

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((s, f) => s + statSync(join(dir, f)).size, 0);
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(bytes < 1e7 ? 2 : 0);
}
