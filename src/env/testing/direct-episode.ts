import type { ChatMessage, Environment, EnvReset, EnvStep } from '../../contracts/index.ts';
import { Rng } from '../../util/random.ts';
import type { TextPolicy } from '../../contracts/index.ts';

export interface DirectEpisode {
  reward: number;
  done: boolean;
  instruction: string;
  actions: string[];
  observations: string[];
  /** The chat as the policy saw it at the end (one unbounded window). */
  messages: ChatMessage[];
}

/**
 * Plays one episode in a single unbounded window (no compaction): the environment and a text
 * policy alone, for generator / verifier / closure tests that must not depend on the runtime.
 * For in-process environments, which answer at once.
 */
export function playDirect(options: {
  env: Environment;
  seed: number;
  policy: TextPolicy;
  maxSteps?: number;
}): DirectEpisode {
  const { env, seed, policy } = options;
  const rng = new Rng(seed);
  const { instruction } = now(env.reset(seed));
  const messages: ChatMessage[] = [
    { role: 'system', content: 'you are an agent' },
    { role: 'user', content: instruction },
  ];
  const actions: string[] = [];
  const observations: string[] = [];
  for (let i = 0; i < (options.maxSteps ?? 200); i++) {
    const action = policy(messages, rng);
    const out = now(env.step(action));
    actions.push(action);
    observations.push(out.observation);
    messages.push({ role: 'assistant', content: action }, { role: 'observation', content: out.observation });
    if (out.done) return { reward: out.reward, done: true, instruction, actions, observations, messages };
  }
  return { reward: 0, done: false, instruction, actions, observations, messages };
}

function now<T extends EnvReset | EnvStep>(answer: T | Promise<T>): T {
  if (answer instanceof Promise) throw new Error('playDirect needs an in-process environment that answers at once');
  return answer;
}
