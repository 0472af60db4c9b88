import { z } from 'zod';

/**
 * Which environment an episode runs in, as data: a registered task family with its knobs, or one
 * Harbor task folder. An episode described this way can be sent to another process, which builds
 * the environment where the episode runs (src/env/create-environment.ts).
 */
export const EnvSpecSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('family'),
      /** Registered family name, e.g. 'kv-ledger'. */
      family: z.string().min(1),
      /** Overrides of the family's default knobs (validated by the family's own schema). */
      knobs: z.record(z.string(), z.unknown()).default({}),
    })
    .strict(),
  z
    .object({
      kind: z.literal('harbor'),
      /** One task folder (absolute path, on the machine where the episode runs). */
      taskDir: z.string().min(1),
      /** Bind solution/ at /solution (the harbor-oracle policy runs it). */
      exposeSolution: z.boolean().default(false),
      /** Longest one command may run, seconds. */
      commandTimeoutSec: z.number().positive().optional(),
      /** Output kept per command, bytes. */
      outputBytes: z.number().int().positive().optional(),
      /** Sandbox backend name (default: bubblewrap). */
      sandbox: z.string().min(1).optional(),
    })
    .strict(),
]);

export type EnvSpec = z.infer<typeof EnvSpecSchema>;
export type EnvSpecInput = z.input<typeof EnvSpecSchema>;
