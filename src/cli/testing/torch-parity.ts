/** The metrics the torch-trainer parity tests compare between the embedded engine and PyTorch. */
export const PARITY_KEYS = ['loss/policy', 'loss/value', 'optim/grad_norm', 'optim/critic_grad_norm'] as const;

/** Within `rel` relative or `abs` absolute (the policy loss of whitened advantages sits near 0). */
export function agree(a: number, b: number, rel = 1e-3, abs = 1e-5): boolean {
  return Math.abs(a - b) <= abs || Math.abs(a - b) <= rel * Math.abs(a);
}
