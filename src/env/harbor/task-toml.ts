import { z } from 'zod';

/**
 * The parts of Harbor's task.toml this runtime reads, with Harbor's defaults (agent and verifier
 * 600 s, 1 cpu, 2048 MB), and this runtime's own `[metadata] verdict`. Other sections and keys
 * (task, other metadata, gpus, ...) are accepted and ignored, as Harbor ignores keys it does not know; docs/harbor.md says which keys
 * are enforced and how.
 */
const envVars = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).default({});
/**
 * Timeouts become Node timers, which hold at most 2^31 - 1 ms (about 24.8 days); a longer one
 * would fire at once (TimeoutOverflowWarning), so it is refused here, naming the key.
 */
export const MAX_TIMEOUT_SEC = Math.floor((2 ** 31 - 1) / 1000);
const seconds = z
  .number()
  .positive()
  .max(MAX_TIMEOUT_SEC, { error: `must be at most ${MAX_TIMEOUT_SEC} s (the longest a timer can wait)` });

export const TaskTomlSchema = z
  .looseObject({
    agent: z.looseObject({ timeout_sec: seconds.default(600) }).default({ timeout_sec: 600 }),
    verifier: z.looseObject({ timeout_sec: seconds.default(600), env: envVars }).default({ timeout_sec: 600, env: {} }),
    solution: z.looseObject({ env: envVars }).default({ env: {} }),
    environment: z
      .looseObject({
        build_timeout_sec: seconds.default(600),
        cpus: z.number().positive().default(1),
        memory_mb: z.number().int().positive().default(2048),
        storage_mb: z.number().int().positive().optional(),
        allow_internet: z.boolean().optional(),
        /** Newer Harbor: public | no-network | allowlist (an allowlist runs as public where it cannot be enforced: never here). */
        network_mode: z.string().optional(),
        /** A prebuilt image used instead of building the Dockerfile, when the daemon has it or can pull it. */
        docker_image: z.string().min(1).optional(),
        env: envVars,
      })
      .default({ build_timeout_sec: 600, cpus: 1, memory_mb: 2048, env: {} }),
    task: z.looseObject({ name: z.string().optional() }).optional(),
    metadata: z
      .looseObject({
        /** "signed": each verification gets a key and its reward counts only when signed (verdict-key.ts). */
        verdict: z.literal('signed', { error: 'the only verdict is "signed" (leave the key out for none)' }).optional(),
      })
      .optional(),
  })
  .superRefine((t, ctx) => {
    // Older task.toml files spell memory as a string ("2G"); Harbor normalizes it, so do we.
    const env = t.environment as Record<string, unknown>;
    if (typeof env.memory === 'string' && env.memory_mb === 2048) {
      const mb = parseMemory(env.memory);
      if (mb === null) ctx.addIssue({ code: 'custom', path: ['environment', 'memory'], message: 'expected e.g. "2G"' });
      else t.environment.memory_mb = mb;
    }
  });

export type TaskToml = z.infer<typeof TaskTomlSchema>;

function parseMemory(s: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$/i.exec(s);
  if (!m) return null;
  const scale: Record<string, number> = { '': 1 / (1024 * 1024), K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024 };
  return Math.max(1, Math.round(Number(m[1]) * scale[m[2]!.toUpperCase()]!));
}
