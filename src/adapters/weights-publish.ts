import { EngineError } from './engine-error.ts';
import { getWeightVersion, updateWeightsFromDisk } from './engine-weights.ts';
import type { ReplicaSet } from './replica-set.ts';

/**
 * A merged-weights push to every replica of a pool (EnginePool.publish): SGLang's
 * update_weights_from_disk on each replica that answers, labelled `version`, then each is asked
 * which version it serves and counted as serving `version` only when it says so. A replica that
 * cannot be reached is taken out (the next push tries it again); one that answers with an error
 * (wrong token, refused path) fails the push, since it would never take weights, and so does one
 * that reports no version unless `acceptUnversioned`. Throws when no replica took them.
 */
export async function publishWeightsToSet(
  set: ReplicaSet,
  o: { modelPath: string; version: string; token?: string; acceptUnversioned: boolean; timeoutMs: number },
): Promise<void> {
  const results = await Promise.all(
    set.replicas.map(async (r) => {
      try {
        await updateWeightsFromDisk({
          url: r.url,
          modelPath: o.modelPath,
          weightVersion: o.version,
          ...(o.token ? { token: o.token } : {}),
        });
        const serves = await getWeightVersion({ url: r.url, timeoutMs: o.timeoutMs });
        set.markUp(r, serves);
        if (serves === null && !o.acceptUnversioned) return unversionedRefusal(r.url, `weight version ${o.version}`);
        return null;
      } catch (e) {
        const message = (e as Error).message;
        if (!/cannot reach the engine/.test(message)) return message;
        set.markDown(r, message);
        return undefined;
      }
    }),
  );
  const refused = results.filter((m): m is string => typeof m === 'string');
  if (refused.length > 0) throw new EngineError(refused.join('; '));
  if (!set.replicas.some((r) => r.up && r.weightVersion === o.version))
    throw new EngineError(
      `no engine replica took the weights (version ${o.version}): ${set.replicas.map((r) => `${r.url}: ${r.lastError ?? 'down'}`).join('; ')}`,
    );
}

/** Why a replica that reports no weight version is not used for a versioned request (the flag that allows it). */
export function unversionedRefusal(urls: string, wanted: string): string {
  return (
    `engine ${urls} reports no weight version (it lacks SGLang's GET /get_weight_version, as vLLM does), so its ` +
    `answers cannot be checked to come from ${wanted}; to sample on it anyway, accept unversioned ` +
    'replicas (crl train --unversioned-ok true, engine.acceptUnversioned, EnginePool acceptUnversioned)'
  );
}
