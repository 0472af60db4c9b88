import { z } from 'zod';
import { EngineError } from './engine-error.ts';

/**
 * vLLM's runtime LoRA API (vllm/entrypoints/serve/lora/ and openai/serving_models.py; a vLLM
 * server has it with VLLM_ALLOW_RUNTIME_LORA_UPDATING set, `crl serve` behind its admin token):
 * `POST /v1/load_lora_adapter {lora_name, lora_path, load_inplace?}` and
 * `POST /v1/unload_lora_adapter {lora_name}` answer 200 with a plain-text "Success: …" line, or an
 * OpenAI-shaped error: 400 (a field missing or empty, a name already loaded, an adapter the engine
 * cannot use), 404 (no adapter at lora_path; unloading a name that is not loaded). Once loaded, a
 * request whose `model` is lora_name (SGLang's /generate: `lora_path`) is answered by the base with
 * that adapter, and `GET /v1/models` lists it with the base as its `parent`. The schemas are the
 * client's and `crl serve`'s (src/serve/lora-routes.ts).
 */
export const LOAD_LORA_PATH = '/v1/load_lora_adapter';
export const UNLOAD_LORA_PATH = '/v1/unload_lora_adapter';
export const MODELS_PATH = '/v1/models';

/** vLLM's LoadLoRAAdapterRequest (pydantic: other fields are ignored). */
export const LoadLoraRequest = z
  .object({ lora_name: z.string(), lora_path: z.string(), load_inplace: z.boolean().default(false) })
  .loose();
/** vLLM's UnloadLoRAAdapterRequest; lora_int_id is accepted and unused, as in vLLM. */
export const UnloadLoraRequest = z.object({ lora_name: z.string(), lora_int_id: z.number().int().nullish() }).loose();

const ModelList = z.object({ data: z.array(z.object({ id: z.string(), parent: z.string().nullish() }).loose()) });

/**
 * The names a trainer gives its adapters: `crl-<tag>-v<policy version>`, the tag drawn once per
 * trainer process, so a request that names a version can only be answered by that version's
 * adapter, and a trainer tells its own adapters from another run's leftovers.
 */
const ADAPTER_NAME = /^crl-([0-9a-f]{8})-v(\d+)$/;

export function adapterName(tag: string, version: string): string {
  return `crl-${tag}-v${version}`;
}

export function parseAdapterName(name: string): { tag: string; version: number } | null {
  const m = ADAPTER_NAME.exec(name);
  return m ? { tag: m[1]!, version: Number(m[2]) } : null;
}

/** `loaded`; or `no-api`: the engine has no such route (vLLM without the variable, SGLang, an older crl serve). */
export type LoraLoad = 'loaded' | 'no-api';

interface Call {
  url: string;
  token?: string;
  timeoutMs?: number;
}

async function call(o: Call & { path: string; body?: unknown }): Promise<{ status: number; text: string }> {
  const endpoint = new URL(o.path, o.url);
  try {
    const res = await fetch(endpoint, {
      method: o.body === undefined ? 'GET' : 'POST',
      headers: {
        ...(o.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
      },
      ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
      signal: AbortSignal.timeout(o.timeoutMs ?? 60_000),
    });
    return { status: res.status, text: await res.text() };
  } catch (e) {
    const cause = (e as { cause?: Error }).cause;
    // The phrase the engine pool reads as "take the replica out" (replica-set.ts).
    throw new EngineError(
      `${endpoint.href}: cannot reach the engine (${(e as Error).message}${cause ? `: ${cause.message}` : ''})`,
      { cause: e },
    );
  }
}

/** The message of an error answer: OpenAI's `{error: {message}}`, older vLLM's `{message}`, FastAPI's `{detail}`. */
function messageOf(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown }; message?: unknown; detail?: unknown };
    const m = j.error?.message ?? j.message ?? j.detail;
    if (typeof m === 'string') return m;
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}

export async function loadLoraAdapter(o: Call & { name: string; path: string }): Promise<LoraLoad> {
  const body: z.input<typeof LoadLoraRequest> = { lora_name: o.name, lora_path: o.path };
  const { status, text } = await call({ ...o, path: LOAD_LORA_PATH, body });
  if (status === 200) return 'loaded';
  const message = messageOf(text);
  // vLLM answers an unreadable lora_path with 404 too, but says so: the route is there.
  if (status === 404 && !/No adapter found/.test(message)) return 'no-api';
  throw new EngineError(
    `${new URL(LOAD_LORA_PATH, o.url).href}: the engine refused adapter ${o.name} from ${o.path} (HTTP ${status}): ${message}`,
  );
}

/** Unloads `name`; one that is not loaded (404) is already gone. */
export async function unloadLoraAdapter(o: Call & { name: string }): Promise<void> {
  const body: z.input<typeof UnloadLoraRequest> = { lora_name: o.name };
  const { status, text } = await call({ ...o, path: UNLOAD_LORA_PATH, body });
  if (status === 200 || status === 404) return;
  throw new EngineError(
    `${new URL(UNLOAD_LORA_PATH, o.url).href}: the engine did not unload adapter ${o.name} (HTTP ${status}): ${messageOf(text)}`,
  );
}

/** The adapters `GET /v1/models` lists (the entries with a `parent`). */
export async function listLoraAdapters(o: Call): Promise<string[]> {
  const { status, text } = await call({ ...o, path: MODELS_PATH });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const r = ModelList.safeParse(json);
  if (status !== 200 || !r.success)
    throw new EngineError(
      `${new URL(MODELS_PATH, o.url).href}: no model list (HTTP ${status}): ${messageOf(text).slice(0, 200)}`,
    );
  return r.data.data.filter((m) => m.parent != null).map((m) => m.id);
}
