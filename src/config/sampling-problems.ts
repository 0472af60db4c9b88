/** Which distribution remote engines' log-probs are of (config.engine.logprobs). */
export const ENGINE_LOGPROBS = ['temperature', 'sampled', 'raw'] as const;
export type EngineLogprobs = (typeof ENGINE_LOGPROBS)[number];

export /**
 * Sampling settings training cannot learn from correctly: temperature 0 (the behaviour policy is
 * a point mass, so the PPO ratio under it is undefined), and an off-policy correction against
 * engine log-probs of another distribution than the one tokens were drawn from (docs/async.md).
 */
function samplingProblems(c: {
  rollout: { temperature: number; topP: number };
  engine?: { logprobs: EngineLogprobs } | undefined;
  trainer?: unknown;
  ppo: { offPolicy?: string | undefined };
}): { path: string[]; message: string }[] {
  const { temperature, topP } = c.rollout;
  const problems: { path: string[]; message: string }[] = [];
  if (temperature === 0)
    problems.push({
      path: ['rollout', 'temperature'],
      message:
        'training needs temperature > 0 (--temperature): greedy decoding has no distribution to take a PPO ratio under',
    });
  const plain = temperature === 1 && topP === 1;
  if (c.trainer !== undefined && !plain)
    problems.push({
      path: ['rollout', 'temperature'],
      message: `the torch trainer scores log-probs at temperature 1 without top-p; train with it at --temperature 1 --top-p 1 (got ${temperature}, ${topP})`,
    });
  const corrected = c.ppo.offPolicy !== undefined && c.ppo.offPolicy !== 'none';
  const kind = c.engine?.logprobs;
  const matches = kind === undefined || kind === 'sampled' || plain || (kind === 'temperature' && topP === 1);
  if (corrected && !matches)
    problems.push({
      path: ['engine', 'logprobs'],
      message:
        `--off-policy ${c.ppo.offPolicy} divides by the engines' log-probs, but --engine-logprobs ${kind} are not those of the distribution ` +
        `tokens are drawn from at --temperature ${temperature} --top-p ${topP}` +
        (kind === 'temperature' ? ' (SGLang leaves top-p out of them)' : '') +
        `; sample at --top-p 1${kind === 'raw' ? ' --temperature 1' : ''}, use engines that report the sampled distribution's log-probs (--engine-logprobs sampled: crl serve), or --off-policy none`,
    });
  return problems;
}
