import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { torchAvailable } from '../testing/torch-available.ts';
import { DEFAULT_TORCH_COMMAND } from './trainer-target.ts';

/**
 * The trainer's AdamW updates each tensor in slices (python/crl_torch/adamw.py: a 0.6B embedding's
 * float64 temporaries whole would take GB), and starts from moments handed to it in place
 * (net.py). Element by element, so slicing must not change a bit: a step with slices of 7
 * elements, over contiguous and non-contiguous tensors, equals the step with whole tensors (the
 * parity tests' tensors are all smaller than one slice).
 */
const SCRIPT = `
import sys, torch
from crl_torch import adamw
torch.manual_seed(0)
cfg = {"lr": 1e-2, "warmupSteps": 1, "totalSteps": 4, "minLrRatio": 0.1, "betas": [0.9, 0.95], "eps": 1e-8,
       "weightDecay": 0.1, "gradClip": 0.5}
def run(slice_elems, clone_moments):
    adamw._SLICE = slice_elems
    torch.manual_seed(1)
    a = torch.nn.Parameter(torch.randn(5, 9))
    b = torch.nn.Parameter(torch.randn(9, 4).t())  # not contiguous: updated whole
    m0 = [torch.randn(5, 9).abs() * 1e-3, torch.zeros(4, 9)]
    v0 = [torch.randn(5, 9).abs() * 1e-4, torch.zeros(4, 9)]
    opt = adamw.AdamW(cfg, [a, b], [True, False], None, *(([x.clone() for x in m0], [x.clone() for x in v0]) if clone_moments else (None, None)))
    if not clone_moments:
        for i in range(2):
            opt.m[i].copy_(m0[i]); opt.v[i].copy_(v0[i])
    for step in range(3):
        a.grad = torch.randn(5, 9)
        b.grad = torch.randn(9, 4).t()
        opt.step()
    return [a.detach(), b.detach(), *opt.m, *opt.v]
whole = run(1 << 30, False)
sliced = run(7, True)
for x, y in zip(whole, sliced):
    if not torch.equal(x, y):
        print("differ", (x - y).abs().max().item()); sys.exit(1)
print("equal")
`;

const run = torchAvailable('torch trainer AdamW slices') ? describe : describe.skip;

run('the torch trainer AdamW', () => {
  it('gives the same bits updated in slices as whole, from moments handed in or zeros copied over', () => {
    const r = spawnSync(DEFAULT_TORCH_COMMAND[0]!, ['-c', SCRIPT], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: join(import.meta.dirname, '../../../python') },
      timeout: 120_000,
    });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('equal');
    expect(r.status).toBe(0);
  });
});
