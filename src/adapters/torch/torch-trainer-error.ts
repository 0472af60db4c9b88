/** Any failure of the PyTorch trainer process: its message names the trainer and what it was doing. */
export class TorchTrainerError extends Error {
  override name = 'TorchTrainerError';
}

/**
 * The line of the trainer's stderr an error quotes: its own last word (`crl_torch: ...`, e.g.
 * which rank was lost) when it said one, else the last line (torchrun's summary ends in rules).
 */
export function lastLine(text: string): string {
  const lines = text
    .trim()
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  const own = lines.filter((l) => l.startsWith('crl_torch:'));
  return own[own.length - 1] ?? lines[lines.length - 1] ?? '';
}

export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
