/** The errors an episode raises: a user-fixable setting, and samplers or runners that break their contracts. */
import type { RolloutConfig } from './config.ts';
import type { SampleResult } from '../contracts/index.ts';

/** The task instruction cannot fit a window with this config (a user-fixable setting). */
export class InstructionTooLongError extends Error {
  constructor(options: { env: string; seed: number; needed: number; room: number; config: RolloutConfig }) {
    const { env, seed, needed, room, config } = options;
    super(
      `the ${env} task with seed ${seed} needs ${needed} tokens to start a window (system prompt + instruction` +
        `${config.resume.includeTask ? ' + longest resume turn, since resume.includeTask is on' : ''}), but ` +
        `contextWindow ${config.contextWindow} - compactThreshold ${config.compactThreshold} leaves ${room}. ` +
        `Raise contextWindow to ${config.compactThreshold + needed} or more.`,
    );
    this.name = 'InstructionTooLongError';
  }
}

export function failDone(episodeId: string): never {
  throw new Error(`internal: episode ${episodeId} is not waiting for the sampler`);
}

export function failNoRequest(episodeId: string, phase: string): never {
  throw new Error(`internal: episode ${episodeId} is in phase ${phase} and has no request`);
}

/** A sampler that breaks the TokenSampler contract is a bug in that sampler: say which rule. */
export function checkResult(
  result: SampleResult,
  options: { maxTokens: number; stop: number; episodeId: string },
): void {
  const n = result.tokens.length;
  const where = `sampler result for episode ${options.episodeId}`;
  if (n === 0) throw new Error(`${where} has no tokens (at least one is required)`);
  if (n > options.maxTokens) throw new Error(`${where} has ${n} tokens, more than maxTokens ${options.maxTokens}`);
  if (result.logprobs.length !== n) throw new Error(`${where} has ${result.logprobs.length} logprobs for ${n} tokens`);
  const stop = result.tokens.indexOf(options.stop);
  if (stop !== -1 && stop !== n - 1) throw new Error(`${where} continues after its stop token`);
}
