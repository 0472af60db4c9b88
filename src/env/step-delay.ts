import { setTimeout as sleep } from 'node:timers/promises';
import type { EnvCallOptions, Environment, EnvStep } from '../contracts/index.ts';

/**
 * The environment with every step delayed by `ms` first, as a sandboxed command or a test suite
 * takes time without using this process's CPU: the I/O-bound setting rollout throughput is
 * measured in (`--step-delay-ms`, docs/distributed.md). The delay honours the call's abort
 * signal, so a cancelled run does not wait it out. 0 returns the environment itself.
 */
export function withStepDelay(env: Environment, ms: number): Environment {
  if (ms <= 0) return env;
  return {
    name: env.name,
    reset: (seed, options) => env.reset(seed, options),
    step: async (action: string, options?: EnvCallOptions): Promise<EnvStep> => {
      await sleep(ms, undefined, options?.signal ? { signal: options.signal } : {});
      return env.step(action, options);
    },
    ...(env.prepare ? { prepare: () => env.prepare!() } : {}),
    ...(env.close ? { close: () => env.close!() } : {}),
  };
}
