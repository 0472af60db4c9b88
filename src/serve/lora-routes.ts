import type { ServerResponse } from 'node:http';
import type { z } from 'zod';
import { LOAD_LORA_PATH, LoadLoraRequest, UNLOAD_LORA_PATH, UnloadLoraRequest } from '../adapters/engine-lora.ts';
import { HttpError } from './http-guard.ts';
import { notFound, type ServedAdapters } from './lora-adapters.ts';
import type { Route } from './route.ts';
import { resolveAllowed } from './weight-admin.ts';

/**
 * vLLM's runtime LoRA API on `crl serve` (adapters/engine-lora.ts has the shapes): behind the admin
 * token and the admin body limit, as /update_weights_from_disk is, and reading only from the
 * --weights-dir directories; answers and errors as vLLM's (a plain-text "Success: …" line; the
 * OpenAI error shape with vLLM's statuses and types). A lora_path outside the directories gets the
 * same 404 as a missing one, so the route tells nothing about what exists.
 */
export function loraRoutes(o: {
  /** Absent: no admin token, and the server's admin gate answers 403 before these run. */
  adapters: ServedAdapters | undefined;
  roots: readonly string[];
  /** The base's name: an adapter may not take it. */
  model: string;
  log?: (line: string) => void;
}): Record<string, Route> {
  return {
    [`POST ${LOAD_LORA_PATH}`]: {
      post: true,
      admin: true,
      handle: (res, body) => {
        const r = parse(LoadLoraRequest, body);
        const { lora_name: name, lora_path: path, load_inplace: inplace } = r;
        if (!name || !path)
          throw new HttpError(400, "Both 'lora_name' and 'lora_path' must be provided.", {}, 'InvalidUserInput');
        if (name === o.model)
          throw new HttpError(
            400,
            `'${name}' is the base model's name; give the adapter another`,
            {},
            'InvalidUserInput',
          );
        const dir = resolveAllowed(o.roots, path, () => notFound(name, path));
        const { bytes } = served(o.adapters).load({ name, dir, requested: path, inplace });
        o.log?.(`crl serve: loaded LoRA adapter ${name} from ${path} (${(bytes / 1e6).toFixed(2)} MB of A and B)`);
        sendText(res, `Success: LoRA adapter '${name}' added successfully.`);
      },
    },
    [`POST ${UNLOAD_LORA_PATH}`]: {
      post: true,
      admin: true,
      handle: (res, body) => {
        const { lora_name: name } = parse(UnloadLoraRequest, body);
        if (!name)
          throw new HttpError(
            400,
            "'lora_name' needs to be provided to unload a LoRA adapter.",
            {},
            'InvalidUserInput',
          );
        served(o.adapters).unload(name);
        o.log?.(`crl serve: unloaded LoRA adapter ${name}`);
        sendText(res, `Success: LoRA adapter '${name}' removed successfully.`);
      },
    },
  };
}

function served(adapters: ServedAdapters | undefined): ServedAdapters {
  if (!adapters) throw new HttpError(403, 'this server serves no LoRA adapters (its model is not an embedded one)');
  return adapters;
}

/** The body by its schema; a missing or mistyped field is vLLM's request-validation 400. */
function parse<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const r = schema.safeParse(body);
  if (!r.success)
    throw new HttpError(400, r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; '));
  return r.data;
}

/** vLLM answers these routes' success with the message as a plain-text body. */
function sendText(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}
