import type { ChatMessage, Environment } from '../../rollout/types.ts';
import { Rng } from '../../util/random.ts';
import type { TextPolicy } from '../family.ts';

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
 */
export function playDirect(options: {
  env: Environment;
  seed: number;
  policy: TextPolicy;
  maxSteps?: number;
}): DirectEpisode {
  const { env, seed, policy } = options;
  const rng = new Rng(seed);
  const { instruction } = env.reset(seed);
  const messages: ChatMessage[] = [
    { role: 'system', content: 'you are an agent' },
    { role: 'user', content: instruction },
  ];
  const actions: string[] = [];
  const observations: string[] = [];
  for (let i = 0; i < (options.maxSteps ?? 200); i++) {
    const action = policy(messages, rng);
    const out = env.step(action);
    actions.push(action);
    observations.push(out.observation);
    messages.push({ role: 'assistant', content: action }, { role: 'observation', content: out.observation });
    if (out.done) return { reward: out.reward, done: true, instruction, actions, observations, messages };
  }
  return { reward: 0, done: false, instruction, actions, observations, messages };
}
