import { readdirSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { UpdateWeightsRequest } from '../adapters/engine-weights.ts';
import { loadPolicyDir } from '../model/formats/load-policy.ts';
import type { LoadedTokenizer } from '../model/tokenizer/load-tokenizer.ts';
import { checkTokenizer } from '../model/tokenizer/tokenizer-match.ts';
import type { PolicyModel } from '../model/network/policy.ts';
import { resolveCheckpointDir } from '../experiments/evaluate/policy-source.ts';
import { send } from './http-errors.ts';
import { checkBearer, HttpError } from './http-guard.ts';
import type { Route } from './route.ts';
import { ServeError } from './serve-error.ts';

/**
 * `crl serve`'s weight loading (SGLang's /update_weights_from_disk, docs/decisions/0019): one
 * update at a time (429 otherwise), only from the directories named with --weights-dir, by real
 * path (no `..` or symlink escape), and only a checkpoint whose model matches the served one and
 * whose weights are finite; the swap happens after every check, so on any failure the old weights
 * keep serving.
 */

/** --weights-dir values as real paths; each must be an existing directory. */
export function weightRoots(dirs: readonly string[]): string[] {
  return dirs.map((d) => {
    try {
      const real = realpathSync(d);
      if (statSync(real).isDirectory()) return real;
    } catch {
      // reported below
    }
    throw new ServeError(
      `--weights-dir ${d} is not a directory; name the directories a trainer writes checkpoints into`,
    );
  });
}

const OUTSIDE = "model_path must name a checkpoint directory inside one of this server's --weights-dir directories";

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The checkpoint directory `requested` names, as a real path inside a root, or an error that is
 * the same whether the path is outside, missing, or not a checkpoint (it reveals nothing about
 * what exists): `refusal`, by default a 400 naming model_path. A relative path is taken relative
 * to each root in turn.
 */
export function resolveAllowed(
  roots: readonly string[],
  requested: string,
  refusal: () => HttpError = () => new HttpError(400, OUTSIDE),
): string {
  const candidates = isAbsolute(requested) ? [requested] : roots.map((r) => resolve(r, requested));
  for (const c of candidates) {
    try {
      const real = realpathSync(c);
      if (!roots.some((r) => inside(r, real))) continue;
      const dir = realpathSync(resolveCheckpointDir(real)); // a run directory: its latest checkpoint
      // Every file the loader may read must be inside a root too (a symlinked file could point out).
      const files = readdirSync(dir).map((f) => realpathSync(join(dir, f)));
      if (roots.some((r) => inside(r, dir)) && files.every((f) => roots.some((r) => inside(r, f)))) return dir;
    } catch {
      // missing, unreadable, or not a checkpoint: the same answer as outside
    }
  }
  throw refusal();
}

/** Loads, checks and swaps in the weights; returns the message for the answer. */
export async function loadServedWeights(options: {
  policy: PolicyModel;
  /** The tokenizer requests speak: the new weights must have been trained with it. */
  tokenizer: LoadedTokenizer;
  roots: readonly string[];
  requested: string;
}): Promise<string> {
  const dir = resolveAllowed(options.roots, options.requested);
  let next: PolicyModel;
  try {
    next = (await loadPolicyDir(dir)).policy; // a checkpoint or a Hugging Face directory; wrong shapes refused
  } catch (e) {
    throw new HttpError(400, `cannot load ${options.requested}: ${(e as Error).message}`);
  }
  const served = options.policy.config as unknown as Record<string, unknown>;
  const given = next.config as unknown as Record<string, unknown>;
  const diff = Object.keys(served).filter((k) => JSON.stringify(served[k]) !== JSON.stringify(given[k]));
  if (diff.length > 0)
    throw new HttpError(
      400,
      `${options.requested} holds another model than the served one (${diff.map((k) => `${k} ${JSON.stringify(given[k])}, served ${JSON.stringify(served[k])}`).join('; ')})`,
    );
  try {
    checkTokenizer({ what: options.requested, ref: next.vocab.tokenizer, tokenizer: options.tokenizer });
  } catch (e) {
    throw new HttpError(400, (e as Error).message);
  }
  if (JSON.stringify(next.vocab.ids) !== JSON.stringify(options.policy.vocab.ids))
    throw new HttpError(400, `${options.requested} has another trimmed vocabulary than the served model`);
  // Checked here too: a Hugging Face directory does not go through the checkpoint loader's check.
  if (!next.net.params.every(Number.isFinite))
    throw new HttpError(400, `cannot load ${options.requested}: it holds non-finite weights (NaN or infinity)`);
  options.policy.net.params.set(next.net.params);
  options.policy.net.markWeightsChanged(); // drops the sampler's KV cache
  return `loaded ${options.requested}`;
}

/** What the admin endpoint needs; absent, it answers 403 (disabled). */
export interface WeightAdmin {
  token: string;
  /** Validates and swaps, or throws with a message safe to show (loadServedWeights). */
  loadWeights: (path: string) => Promise<string>;
}

/** The admin gate, before any byte of the body is read: 403 when disabled, 401 without the token. */
export function checkAdmin(req: IncomingMessage, admin: WeightAdmin | undefined): void {
  if (!admin)
    throw new HttpError(
      403,
      'weight loading is disabled; start crl serve with --admin-token (and --weights-dir) to enable it',
    );
  checkBearer(req, admin.token);
}

/**
 * `POST /update_weights_from_disk`, single-flight: a second update while one runs gets 429.
 * The server lets a request through to it only past checkAdmin.
 */
export function weightAdminRoute(options: {
  admin: WeightAdmin | undefined;
  /** Called after a successful swap with the request's weight_version (SGLang: absent keeps the old label). */
  onLoaded?: (weightVersion: string | undefined) => void;
  log?: (line: string) => void;
}): Route {
  let loading = false;
  const { log } = options;
  return {
    post: true,
    admin: true,
    handle: async (res: ServerResponse, body: unknown) => {
      const r = UpdateWeightsRequest.safeParse(body);
      if (!r.success) throw new HttpError(400, `model_path: ${r.error.issues[0]!.message}`);
      if (loading) throw new HttpError(429, 'a weight update is already running; retry when it has finished');
      loading = true;
      try {
        // The swap itself is synchronous, so it never lands inside a generation; on any failure
        // the served weights stay as they were.
        const message = await options.admin!.loadWeights(r.data.model_path);
        options.onLoaded?.(r.data.weight_version);
        log?.(
          `crl serve: ${message}${r.data.weight_version !== undefined ? ` as weight version ${r.data.weight_version}` : ''}`,
        );
        send(res, 200, { success: true, message });
      } catch (e) {
        log?.(`crl serve: refused a weight update: ${(e as Error).message}`);
        throw e instanceof HttpError ? e : new HttpError(400, (e as Error).message);
      } finally {
        loading = false;
      }
    },
  };
}
