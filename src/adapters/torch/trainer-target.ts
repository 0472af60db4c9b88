import { fileURLToPath } from 'node:url';

/**
 * Where the PyTorch trainer runs (docs/torch-trainer.md): a child started with a command (one
 * process, or several under torchrun), or a trainer started separately and reached over TCP.
 */

/** Where the crl_torch package lives: the repository's python/ folder. */
export const CRL_TORCH_PYTHON_PATH = fileURLToPath(new URL('../../../python', import.meta.url));

/** The default trainer command: Debian's torch imports from the system python. */
export const DEFAULT_TORCH_COMMAND: readonly string[] = ['/usr/bin/python3', '-m', 'crl_torch'];

/**
 * The command that starts `procs` trainer processes under torchrun (docs/torch-trainer.md#several-processes):
 * one node, a rendezvous on a free local port (so two runs on one machine do not meet), the
 * workers' failure seen within a second. `crl_torch.torchrun` is torchrun with the fix Debian's
 * torch 1.13 needs under Python 3.11 (and torchrun unchanged elsewhere).
 */
export function torchrunCommand(procs: number, python = DEFAULT_TORCH_COMMAND[0]!): string[] {
  return [
    python,
    '-m',
    'crl_torch.torchrun',
    '--nnodes',
    '1',
    '--nproc_per_node',
    String(procs),
    '--rdzv_backend',
    'c10d',
    '--rdzv_endpoint',
    'localhost:0',
    '--monitor_interval',
    '1',
    '-m',
    'crl_torch',
  ];
}

/** tcp://host:port (the address `python3 -m crl_torch --listen` prints) -> where to connect; null: not such a URL. */
export function parseTrainerUrl(url: string): { host: string; port: number } | null {
  const u = URL.canParse(url) ? new URL(url) : null;
  const port = u ? Number(u.port) : 0;
  if (!u || u.protocol !== 'tcp:' || u.hostname === '' || !(port > 0) || (u.pathname !== '' && u.pathname !== '/'))
    return null;
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}
