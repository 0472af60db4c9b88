/**
 * The training-curve figures (method §8 Figure 4 analogue plus health curves), shared by the static
 * report (plots.ts) and `crl view`'s run view. No imports: the web app bundles this file.
 */
export interface FigureDef {
  id: string;
  metric: string; // group/name in metrics.jsonl
  title: string;
}

export const FIGURES: readonly FigureDef[] = [
  { id: 'summary-length', metric: 'rollout/summary_tokens', title: 'Summary length (tokens)' },
  { id: 'exec-turn-tokens', metric: 'rollout/tokens_per_exec_turn', title: 'Generated tokens per execution turn' },
  // The tools format with thinking on (docs/agent-format.md): Figure 4's reasoning panel.
  {
    id: 'reasoning-tokens',
    metric: 'rollout/reasoning_tokens_per_turn',
    title: 'Reasoning tokens per execution turn',
  },
  { id: 'entropy', metric: 'policy/entropy', title: 'Policy entropy' },
  { id: 'success', metric: 'rollout/success_rate', title: 'Training success rate' },
  { id: 'compactions', metric: 'rollout/compactions_per_episode', title: 'Compactions per episode' },
  { id: 'value-loss', metric: 'loss/value', title: 'Value loss' },
  { id: 'approx-kl', metric: 'policy/approx_kl', title: 'Approx. KL' },
];
