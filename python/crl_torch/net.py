"""One trained network (policy or critic): its modules, AdamW, and the pending training forward
whose activations the next backward consumes (src/contracts/trainable.ts)."""

import torch

from . import hf_models, modules, sharding
from .adamw import AdamW
from .lora import Adapters


def _floats(buf, count, device):
    # A bytearray from wire.py is used in place (the parameters and moments of the network then
    # live in it); anything else is copied into one.
    data = buf if isinstance(buf, bytearray) else bytearray(buf)
    return torch.frombuffer(data, dtype=torch.float32, count=count).to(device)


class Net:
    def __init__(self, kind, spec, model, buffers, ranks, shard, impl="builtin"):
        """spec: {tensors: [{name, shape, decay}], optim, step[, lora]}; buffers: flat params, m, v
        (float32), full on every rank; with spec.lora (the policy's LoRA adapters, lora.py): the
        frozen base's params, then the adapters' A/B, m, v. shard: 'replicate' (every rank keeps
        them) or 'fsdp' (each keeps its rows); impl: 'builtin' (modules.py) or 'transformers'
        (hf_models.py)."""
        self.kind = kind
        self.ranks = ranks
        self.sharded = shard == "fsdp"
        device = torch.device(ranks.device)
        self.names = [t["name"] for t in spec["tensors"]]
        self.shapes = [tuple(t["shape"]) for t in spec["tensors"]]
        total = sum(_numel(s) for s in self.shapes)
        self.lora = None
        if spec.get("lora") is not None:
            self._init_lora(spec, model, buffers, device, total, impl)
            return
        flat, m, v = (_floats(b, total, device) for b in buffers)
        build = hf_models.build if impl == "transformers" else modules.build
        self.module = build(kind, model, zip(self.names, _split(flat, self.shapes)))
        if self.sharded:
            sharding.shard_network(self.module, ranks)  # each rank keeps its rows; the full tensors go
        # After sharding the module holds new parameter objects (DTensors): look them up by name.
        plist = [self.module.get_parameter(n) for n in self.names]
        self.params = dict(zip(self.names, plist))
        reduce_sum = ranks.all_reduce_sum if self.sharded else None
        if self.sharded:
            ms, vs = _split(m, self.shapes), _split(v, self.shapes)
            self.optimizer = AdamW(spec["optim"], plist, [bool(t["decay"]) for t in spec["tensors"]], reduce_sum)
            for i, (mi, vi) in enumerate(zip(ms, vs)):
                want = self.optimizer.m[i].shape
                mine_m, mine_v = (sharding.my_shard(x, ranks.world, ranks.rank) for x in (mi, vi))
                if mine_m.shape != want:
                    raise RuntimeError(
                        f"{self.names[i]}: this rank holds {tuple(want)}, expected rows {tuple(mine_m.shape)}"
                    )
                self.optimizer.m[i].copy_(mine_m)
                self.optimizer.v[i].copy_(mine_v)
        else:
            # The moments as they arrived, views of the received buffers, no second copy (4.8 GB of
            # them for a 0.6B policy): AdamW only updates them in place.
            ms, vs = _views(m, self.shapes), _views(v, self.shapes)
            self.optimizer = AdamW(spec["optim"], plist, [bool(t["decay"]) for t in spec["tensors"]], None, ms, vs)
        self.optimizer.step_count = int(spec["step"])
        self.pending = None

    def _init_lora(self, spec, model, buffers, device, total, impl):
        """The policy through LoRA adapters: the base frozen (no gradient, no AdamW moments), A and
        B on the adapted projections the only tensors AdamW steps, with the adapters' own optimizer
        settings and step (crl's lora-adapter.ts: every A and B decays)."""
        if self.sharded:
            raise ValueError("LoRA adapters train on replicated ranks only; leave out --shard fsdp")
        flat = _floats(buffers[0], total, device)
        build = hf_models.build if impl == "transformers" else modules.build
        self.module = build(self.kind, model, zip(self.names, _split(flat, self.shapes)))
        plist = [self.module.get_parameter(n) for n in self.names]  # before PEFT renames the adapted ones
        self.params = dict(zip(self.names, plist))
        for p in self.module.parameters():
            p.requires_grad_(False)
        self.lora = Adapters(spec["lora"], buffers[1:4], device)
        adapters = self.lora.attach(self.module, impl)
        self.optimizer = AdamW(self.lora.optim, adapters, [True] * len(adapters), None, self.lora.m, self.lora.v)
        self.optimizer.step_count = self.lora.step
        self.pending = None

    def forward(self, tokens, lengths, train):
        """tokens [B, T] (right-padded), lengths [B]; returns per-row outputs [B, T - 1] as float32."""
        self.pending = None  # any forward replaces the saved activations (model/network/network.ts)
        with torch.set_grad_enabled(train):
            out = self.module(tokens)
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

    def held(self):
        """Elements this rank holds: [parameters (a LoRA policy's base and adapters), AdamW moments (m + v)]."""
        params = sum(sharding.local(p).numel() for p in self.params.values())
        params += sum(p.numel() for p in self.lora.params) if self.lora else 0
        return [params, sum(m.numel() + v.numel() for m, v in zip(self.optimizer.m, self.optimizer.v))]

    def full(self, what):
        """The parameters ('params') or AdamW moments ('m', 'v') as full tensors in spec order: on
        every rank when replicated, on rank 0 (None elsewhere) when sharded (a collective)."""
        if what == "params":
            ts = [sharding.local(p).detach() for p in self.params.values()]
        else:
            ts = getattr(self.optimizer, what)
        if not self.sharded:
            return ts
        return sharding.gather_full(self.ranks, ts, self.shapes)

    def flat(self, what):
        """full(what) as float32 bytes (None where full gives None). A LoRA policy answers its
        adapters instead (A/B, their m, v in crl's layout): crl merges them onto its own base."""
        if self.lora is not None:
            return self.lora.flat(what)
        ts = self.full(what)
        if ts is None:
            return None
        return torch.cat([t.detach().reshape(-1).float().cpu() for t in ts]).numpy().tobytes()


def _views(flat, shapes):
    """Consecutive views of a flat tensor, one per shape, sharing its storage."""
    out, offset = [], 0
    for shape in shapes:
        n = _numel(shape)
        out.append(flat[offset : offset + n].view(shape))
        offset += n
    return out


def _split(flat, shapes):
    """Consecutive views of a flat tensor, one per shape (cloned: each parameter owns its storage)."""
    return [x.clone() for x in _views(flat, shapes)]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
