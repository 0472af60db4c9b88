import { EngineError } from './engine-error.ts';
import {
  adapterName,
  LOAD_LORA_PATH,
  listLoraAdapters,
  loadLoraAdapter,
  parseAdapterName,
  unloadLoraAdapter,
  type LoraLoad,
} from './engine-lora.ts';
import type { Replica, ReplicaSet } from './replica-set.ts';

/**
 * An adapter push to every replica of a pool (EnginePool.publishAdapter), one replica at a time
 * in parallel. On each: its stale adapters out first (the trainer's own older than the version
 * before this one, and any other trainer's `crl-<tag>-v<n>`: a run that stopped leaves its adapters
 * loaded), then the new one in. Keeping the previous version lets a request sent just before the
 * push finish on the weights it named; unloading first keeps an engine at two of our adapters at
 * most (crl serve holds --max-loras).
 */
export interface AdapterPush {
  tag: string;
  version: string;
  /** The adapter directory, as the engines see it (under their --weights-dir). */
  path: string;
  /** The version published before this one, kept loaded. */
  keep?: number;
  token?: string;
  timeoutMs: number;
}

/**
 * One push (EnginePool.publishAdapter). The first one decides: when a replica has no adapter API
 * or refuses the adapter, and `fallback`, it returns why (having unloaded the adapter where it was
 * taken) and the pool stays on merged weights; otherwise the replicas are from then on asked their
 * version by the adapters they list, and any refusal throws, as on every later push. Replicas
 * that took it serve `push.version`; throws when none did.
 */
export async function publishAdapterToSet(
  set: ReplicaSet,
  push: AdapterPush,
  o: { first: boolean; fallback: boolean },
): Promise<string | null> {
  const answers = await pushAdapterToAll(set, push);
  const why = answers.flatMap((a, i) =>
    a === 'no-api' ? [`${set.replicas[i]!.url} has no ${LOAD_LORA_PATH}`] : typeof a === 'object' ? [a.refused] : [],
  );
  const took = set.replicas.filter((_, i) => answers[i] === 'loaded');
  if (o.first && why.length > 0 && o.fallback) {
    await unloadEverywhere(push, took);
    return why.join('; ');
  }
  if (o.first) {
    const { tag } = push;
    set.useReader({
      read: (url, timeoutMs) => servedAdapterVersion({ url, tag, timeoutMs }),
      nullIsUnversioned: false,
    });
  }
  if (why.length > 0) throw new EngineError(why.join('; '));
  for (const r of took) set.markUp(r, push.version);
  if (took.length === 0)
    throw new EngineError(
      `no engine replica took adapter version ${push.version}: ${set.replicas.map((r) => `${r.url}: ${r.lastError ?? 'down'}`).join('; ')}`,
    );
  return null;
}

/** Per replica: loaded, no adapter API, down (undefined: taken out), or why it refused. */
type PushAnswer = LoraLoad | { refused: string } | undefined;

async function pushAdapterToAll(set: ReplicaSet, push: AdapterPush): Promise<PushAnswer[]> {
  return Promise.all(
    set.replicas.map(async (r) => {
      try {
        return await pushAdapter(r, push);
      } catch (e) {
        const message = (e as Error).message;
        if (!/cannot reach the engine/.test(message)) return { refused: message };
        set.markDown(r, message);
        return undefined;
      }
    }),
  );
}

async function pushAdapter(r: Replica, p: AdapterPush): Promise<LoraLoad> {
  const call = { url: r.url, timeoutMs: p.timeoutMs, ...(p.token ? { token: p.token } : {}) };
  const name = adapterName(p.tag, p.version);
  let listed: string[] = [];
  try {
    listed = await listLoraAdapters(call);
  } catch (e) {
    if (/cannot reach the engine/.test((e as Error).message)) throw e;
    // No model list: nothing of ours to unload; the load below says whether it takes adapters.
  }
  for (const other of listed) {
    const parsed = parseAdapterName(other);
    if (!parsed) continue; // not a trainer's: someone else's adapter, left alone
    const ours = parsed.tag === p.tag;
    // The same name again (a version published twice) is replaced: unload, then load.
    if (ours && other !== name && p.keep !== undefined && parsed.version >= p.keep) continue;
    await unloadLoraAdapter({ ...call, name: other });
  }
  return loadLoraAdapter({ ...call, name, path: p.path });
}

/** Best effort: unloads `version`'s adapter wherever it was loaded (a first push that falls back to merged weights). */
async function unloadEverywhere(push: AdapterPush, on: readonly Replica[]): Promise<void> {
  const name = adapterName(push.tag, push.version);
  await Promise.all(
    on.map((r) =>
      unloadLoraAdapter({
        url: r.url,
        name,
        timeoutMs: push.timeoutMs,
        ...(push.token ? { token: push.token } : {}),
      }).catch(() => {}),
    ),
  );
}

/**
 * Which weights a replica serves under adapter pushes: the newest of the trainer's adapters
 * (tag) that its `GET /v1/models` lists, as the policy version; null when it lists none (a
 * restarted engine serves only its base, so it takes no request until the next push).
 */
export async function servedAdapterVersion(o: { url: string; tag: string; timeoutMs: number }): Promise<string | null> {
  const names = await listLoraAdapters({ url: o.url, timeoutMs: o.timeoutMs });
  const versions = names
    .map(parseAdapterName)
    .filter((p): p is { tag: string; version: number } => p !== null && p.tag === o.tag)
    .map((p) => p.version);
  return versions.length ? String(Math.max(...versions)) : null;
}
