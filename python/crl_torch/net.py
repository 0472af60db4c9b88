"""One trained network (policy or critic): named parameters, AdamW, and the pending training
forward whose activations the next backward consumes (src/contracts/trainable.ts)."""

import torch

from . import llama
from .adamw import AdamW


def _floats(buf, count, device):
    return torch.frombuffer(bytearray(buf), dtype=torch.float32, count=count).to(device)


class Net:
    def __init__(self, kind, spec, model, buffers, device):
        """spec: {tensors: [{name, shape, decay}], optim, step}; buffers: flat params, m, v (float32)."""
        self.kind = kind
        self.model = model
        self.device = device
        self.names = [t["name"] for t in spec["tensors"]]
        self.shapes = [tuple(t["shape"]) for t in spec["tensors"]]
        total = sum(_numel(s) for s in self.shapes)
        flat, m, v = (_floats(b, total, device) for b in buffers)
        self.params = {}
        offset = 0
        for name, shape in zip(self.names, self.shapes):
            n = _numel(shape)
            self.params[name] = torch.nn.Parameter(flat[offset : offset + n].view(shape).clone())
            offset += n
        plist = [self.params[n] for n in self.names]
        self.optimizer = AdamW(spec["optim"], plist, [bool(t["decay"]) for t in spec["tensors"]])
        self.optimizer.step_count = int(spec["step"])
        offset = 0
        for i, shape in enumerate(self.shapes):
            n = _numel(shape)
            self.optimizer.m[i].copy_(m[offset : offset + n].view(shape))
            self.optimizer.v[i].copy_(v[offset : offset + n].view(shape))
            offset += n
        self.pending = None

    def forward(self, tokens, lengths, train):
        """tokens [B, T] (right-padded), lengths [B]; returns per-row outputs [B, T - 1] as float32."""
        self.pending = None  # any forward replaces the saved activations (model/network.ts)
        with torch.set_grad_enabled(train):
            m = self.model
            hidden = llama.trunk(self.params, m.shape, tokens, m.cos, m.sin)
            if self.kind == "policy":
                out = llama.policy_head(self.params, m.shape, hidden, tokens, m.unknown, m.unknown_logit)
            else:
                out = (llama.value_head(self.params, hidden),)
        if train:
            self.pending = (out, lengths)
        return [o.detach() for o in out]

    def backward(self, grads):
        """grads: tensors [B, T - 1] matching the pending forward's outputs (None: no gradient)."""
        if self.pending is None:
            raise RuntimeError(
                "backward() needs a preceding forward(tokens, { train: true }) with no other forward in between"
            )
        out, _ = self.pending
        self.pending = None
        total = None
        for o, g in zip(out, grads):
            if g is None:
                continue
            term = (o * g).sum()
            total = term if total is None else total + term
        if total is not None:
            total.backward()

    def step(self):
        return self.optimizer.step()

    def flat(self, what):
        """The parameters ('params') or AdamW moments ('m', 'v') in spec order, as float32 bytes."""
        if what == "params":
            ts = [self.params[n] for n in self.names]
        else:
            ts = getattr(self.optimizer, what)
        return torch.cat([t.detach().reshape(-1).float().cpu() for t in ts]).numpy().tobytes()


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
