"""AdamW exactly as src/optim defines it (adamw.ts, clip.ts, schedule.ts).

The embedded engine reads float32 weights, gradients and moments, computes each update in double
and stores float32; this does the same per tensor (float64 temporaries), so both engines take the
same step up to the last bit of the gradients they are given.

Element by element, so it runs unchanged on shards: under FSDP each rank updates the rows of every
tensor it holds (parameter, gradient and moments alike), and the clipping norm is the square root
of the all-reduced sum of every rank's float64 sum of squares (`reduce_sum`).
"""

import math

import torch

from .sharding import local


# Elements per slice of the update (float64 temporaries of 32 MB each).
_SLICE = 1 << 22


def learning_rate(cfg, step):
    """schedule.ts: linear warm-up to lr, then a cosine to lr * minLrRatio at totalSteps."""
    lr, warmup, total, min_ratio = cfg["lr"], cfg["warmupSteps"], cfg["totalSteps"], cfg["minLrRatio"]
    if step < warmup:
        return lr * (step + 1) / warmup
    span = max(1, total - warmup)
    progress = min(1.0, (step - warmup) / span)
    min_lr = lr * min_ratio
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


class AdamW:
    """Over a list of (parameter, decay) pairs; moments are float32 like the embedded engine's and
    shaped like this rank's part of each parameter. reduce_sum: sums a float64 over the ranks
    that hold the other shards (None: this rank holds every element)."""

    def __init__(self, cfg, params, decay, reduce_sum=None, m=None, v=None):
        """m, v: the moments to start from (float32, shaped as this rank's part of each
        parameter, used in place); None: zeros."""
        self.cfg = cfg
        self.params = params
        self.decay = decay
        self.reduce_sum = reduce_sum
        self.step_count = 0
        self.m = list(m) if m is not None else [torch.zeros_like(local(p)) for p in params]
        self.v = list(v) if v is not None else [torch.zeros_like(local(p)) for p in params]
        for i, p in enumerate(params):
            if self.m[i].shape != local(p).shape or self.v[i].shape != local(p).shape:
                raise RuntimeError(f"AdamW: moments of parameter {i} are {tuple(self.m[i].shape)}, expected {tuple(local(p).shape)}")

    def grad_norm(self):
        """Global L2 norm of the accumulated gradients, float64 accumulation (clip.ts)."""
        s = 0.0
        for p in self.params:
            if p.grad is not None:
                s += float((local(p.grad).double() ** 2).sum())
        if self.reduce_sum is not None:
            s = self.reduce_sum(s)
        return math.sqrt(s)

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, grad_norm=None):
        """Clips, steps, zeroes; a non-finite norm skips the update (adamw.ts). grad_norm: given by DDP."""
        cfg = self.cfg
        norm = self.grad_norm() if grad_norm is None else grad_norm
        lr = learning_rate(cfg, self.step_count)
        if not math.isfinite(norm):
            self.zero_grad()
            return norm, lr
        clip = cfg["gradClip"]
        k = clip / (norm + 1e-6) if clip > 0 and norm > clip else None
        self.step_count += 1
        t = self.step_count
        b1, b2 = cfg["betas"]
        c1 = 1 / (1 - b1**t)
        c2 = 1 / (1 - b2**t)
        eps = cfg["eps"]
        wd = lr * cfg["weightDecay"]
        for param, m, v, decay in zip(self.params, self.m, self.v, self.decay):
            p = local(param)  # in place on this rank's rows: the parameter's own storage
            g = local(param.grad) if param.grad is not None else torch.zeros_like(p)
            # Element by element, so in slices: the float64 temporaries of a whole 0.6B embedding
            # (155M elements) would take several GB at once.
            # (reshape of a non-contiguous tensor would copy, and the in-place writes be lost: such
            # a tensor is updated whole.)
            whole = not all(t.is_contiguous() for t in (p, g, m, v))
            pf, gf, mf, vf = (t if whole else t.view(-1) for t in (p, g, m, v))
            for a in range(0, 1 if whole else pf.numel(), _SLICE):
                sl = slice(None) if whole else slice(a, a + _SLICE)
                gs = gf[sl]
                if k is not None:
                    gs = (gs.double() * k).float()  # clip.ts rounds the clipped gradient to float32
                gs = gs.double()
                mi = b1 * mf[sl].double() + (1 - b1) * gs
                vi = b2 * vf[sl].double() + (1 - b2) * gs * gs
                mf[sl].copy_(mi)
                vf[sl].copy_(vi)
                x = pf[sl].double()
                if decay:
                    x = x - wd * x
                pf[sl].copy_(x - (lr * (mi * c1)) / (torch.sqrt(vi * c2) + eps))
        self.zero_grad()
        return norm, lr
