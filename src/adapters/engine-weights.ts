import { z } from 'zod';
import { EngineError } from './engine-error.ts';

/**
 * SGLang's weight reload: `POST /update_weights_from_disk {"model_path": …}` answers
 * `{"success": bool, "message": str}`. The trainer writes the policy to a directory after each
 * update and asks the engine to load it (method §6 "publish new weights"), the way slime and verl
 * keep a remote rollout engine on the current policy. `crl serve` implements the same endpoint.
 */
export const UPDATE_WEIGHTS_PATH = '/update_weights_from_disk';

/**
 * `weight_version` is SGLang's label for the loaded weights: reported by `GET /get_weight_version`
 * and in every `/generate` answer's `meta_info`, so a client can tell which weights sampled.
 */
export const UpdateWeightsRequest = z.object({
  model_path: z.string().min(1),
  weight_version: z.string().min(1).optional(),
});

/** SGLang's `GET /get_weight_version` (crl serve answers it too). */
export const WEIGHT_VERSION_PATH = '/get_weight_version';
const WeightVersionResponse = z.object({ weight_version: z.string().nullable() });
const UpdateWeightsResponse = z.object({ success: z.boolean(), message: z.string().default('') });

/** The environment variable that holds the engine's admin token, on both sides (crl serve, crl train). */
export const ADMIN_TOKEN_ENV = 'CRL_ADMIN_TOKEN';

export async function updateWeightsFromDisk(options: {
  url: string;
  modelPath: string;
  /** Labels the loaded weights (SGLang's weight_version); the trainer sends its policy version. */
  weightVersion?: string;
  /** Sent as `Authorization: Bearer <token>` (crl serve refuses weight loads without it). */
  token?: string;
  timeoutMs?: number;
}): Promise<void> {
  const endpoint = new URL(UPDATE_WEIGHTS_PATH, options.url);
  let res: Response;
  try {
    res = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      },
      body: JSON.stringify({
        model_path: options.modelPath,
        ...(options.weightVersion !== undefined ? { weight_version: options.weightVersion } : {}),
      }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 300_000),
    });
  } catch (e) {
    const cause = (e as { cause?: Error }).cause;
    throw new EngineError(
      `${endpoint.href}: cannot reach the engine (${(e as Error).message}${cause ? `: ${cause.message}` : ''}); is it running at ${options.url}?`,
    );
  }
  const text = await res.text();
  let parsed: z.infer<typeof UpdateWeightsResponse> | undefined;
  try {
    const r = UpdateWeightsResponse.safeParse(JSON.parse(text));
    if (r.success) parsed = r.data;
  } catch {
    // not JSON: reported below with the status
  }
  if (!res.ok || !parsed?.success)
    throw new EngineError(
      `${endpoint.href}: weight update failed (HTTP ${res.status}): ${parsed?.message || text.slice(0, 300)}`,
    );
}

/** The engine's current weight version (null when it reports none); throws EngineError when it cannot be reached or answers with an error. */
export async function getWeightVersion(options: { url: string; timeoutMs?: number }): Promise<string | null> {
  const endpoint = new URL(WEIGHT_VERSION_PATH, options.url);
  let text: string;
  let status: number;
  try {
    const res = await fetch(endpoint, { signal: AbortSignal.timeout(options.timeoutMs ?? 5_000) });
    status = res.status;
    text = await res.text();
  } catch (e) {
    throw new EngineError(`${endpoint.href}: cannot reach the engine (${(e as Error).message})`, { cause: e });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  // An engine without the endpoint (older SGLang) answers, so it is up; it reports no version.
  if (status === 404) return null;
  const r = WeightVersionResponse.safeParse(json);
  if (status !== 200 || !r.success)
    throw new EngineError(`${endpoint.href}: no weight version (HTTP ${status}): ${text.slice(0, 200)}`);
  return r.data.weight_version;
}
