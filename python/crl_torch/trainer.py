"""The trainer's operations, one per message type of the protocol (docs/torch-trainer.md#protocol).

Each handler takes the request header and its raw buffers and returns (header, buffers). Token
batches arrive as one int32 buffer of concatenated sequences plus their lengths; per-token
outputs and gradients leave and arrive the same way as float32, in the position convention of
src/contracts/trainable.ts (index 0 of every sequence is 0 and carries no gradient).
"""

import json
import os

import torch

from . import PROTOCOL_VERSION, hf_models, llama, lora
from .net import Net
from .safetensors_io import write_safetensors

# What a rank with no sequence of its own runs under FSDP, where every rank has to take part in
# every forward and backward (the weights are gathered and the gradients reduced in them): one
# two-token sequence whose outputs are dropped and whose gradient is zero, so it adds nothing.
IDLE_LENGTHS = [2]


class Model:
    """What policy and critic share: the shape, the RoPE tables, the vocabulary's unknown slot."""

    def __init__(self, init, rope_buffers, device, dtype):
        cfg = init["config"]
        self.shape = llama.Shape(cfg)
        rope = init["rope"]
        self.cos, self.sin = llama.rope_tables(*rope_buffers, rope["positions"], rope["half"], dtype, device)
        self.unknown = init["vocab"]["unknown"]
        self.unknown_logit = float(init["vocab"]["unknownLogit"])
        self.hf_config = init["hfConfig"]


class Trainer:
    def __init__(self, ranks, shard="replicate", impl="builtin", impl_explicit=False):
        self.ranks = ranks
        self.shard = shard
        self.impl = impl  # 'builtin' or 'transformers' (resolved from --model-impl by __main__)
        self.impl_explicit = impl_explicit  # --model-impl named it (not auto)
        self.sharded = shard == "fsdp" and ranks.world > 1
        self.device = torch.device(ranks.device)
        self.dtype = torch.float32
        self.model = None
        self.nets = {}
        # Per net: (all sequences' lengths, this rank's share) of the pending training forward.
        self.pending = {}

    def handle(self, header, buffers):
        op = header.get("op")
        fn = getattr(self, "op_" + str(op), None)
        if fn is None:
            raise ValueError(f"unknown op {op!r}")
        return fn(header, buffers)

    def op_hello(self, header, buffers):
        return {
            "protocol": PROTOCOL_VERSION,
            "torch": torch.__version__,
            "device": str(self.device),
            "pid": os.getpid(),
            "worldSize": self.ranks.world,
            "shard": self.shard,
            "model": f"transformers {hf_models.version()}" if self.impl == "transformers" else "built-in",
            # What init accepts beyond protocol 1's networks: crl checks before sending adapters, so
            # an older trainer is refused instead of silently training every weight.
            "features": ["lora"],
        }, []

    def op_init(self, header, buffers):
        """Policy (and critic) weights and AdamW state, as crl's flat buffers (a start or a resume)."""
        self.model = Model(header, buffers[:2], self.device, self.dtype)
        self.nets = {}
        self.pending = {}
        i = 2
        for kind in ("policy", "critic"):
            spec = header["nets"].get(kind)
            if spec is None:
                continue
            n = 4 if spec.get("lora") is not None else 3  # LoRA: base, then the adapters' A/B, m, v
            self.nets[kind] = Net(kind, spec, self.model, buffers[i : i + n], self.ranks, "fsdp" if self.sharded else "replicate", self._impl_for(spec))
            i += n
        # What each rank holds, so a client (and the tests) can see the shards.
        counts = self.ranks.gather_counts([n for k in sorted(self.nets) for n in self.nets[k].held()])
        reply = {"nets": sorted(self.nets)}
        # Which code runs each network's adapters ("built-in" or "peft VERSION"), so crl can say.
        adapters = {k: n.lora.runs_on for k, n in self.nets.items() if n.lora is not None}
        if adapters:
            reply["adapters"] = adapters
        if counts is not None:
            reply["held"] = {
                k: {"params": [c[2 * j] for c in counts], "moments": [c[2 * j + 1] for c in counts]}
                for j, k in enumerate(sorted(self.nets))
            }
        return reply, []

    def _impl_for(self, spec):
        """A network with LoRA adapters runs on transformers' classes only through PEFT; where peft
        does not import, on the built-in network (unless --model-impl transformers insisted)."""
        if spec.get("lora") is None or self.impl != "transformers" or lora.peft_version() is not None:
            return self.impl
        if self.impl_explicit:
            raise ValueError("LoRA adapters on transformers' model classes need peft, which cannot be imported here")
        return "builtin"

    def _net(self, header):
        kind = header.get("net")
        if kind not in self.nets:
            raise ValueError(f"no {kind!r} network (init first; loaded: {sorted(self.nets)})")
        return self.nets[kind]

    def op_forward(self, header, buffers):
        """Runs this rank's share of the sequences; rank 0 answers with every share in order."""
        net = self._net(header)
        lengths = [int(n) for n in header["lengths"]]
        if not lengths or min(lengths) < 1:
            raise ValueError("every sequence needs at least one token")
        flat = torch.frombuffer(bytearray(buffers[0]), dtype=torch.int32, count=sum(lengths))
        starts = _starts(lengths)
        train = bool(header.get("train"))
        self.pending.pop(net.kind, None)
        net.pending = None  # any forward replaces the saved activations (model/network/network.ts)
        outputs = 2 if net.kind == "policy" else 1
        mine = self.ranks.share(len(lengths))
        mine_lengths = [lengths[i] for i in mine]
        if mine:
            tokens = self._batch(torch.cat([flat[starts[i] : starts[i] + lengths[i]] for i in mine]), mine_lengths)
            outs = [self._unpad(o, mine_lengths) for o in net.forward(tokens, mine_lengths, train)]
        else:
            if self.sharded:  # FSDP's gathers need this rank too (IDLE_LENGTHS)
                net.forward(self._batch(torch.zeros(sum(IDLE_LENGTHS), dtype=torch.int32), IDLE_LENGTHS), IDLE_LENGTHS, train)
            outs = [torch.zeros(0) for _ in range(outputs)]
        if train:
            self.pending[net.kind] = (lengths, mine)
        sizes = [sum(lengths[r::self.ranks.world]) for r in range(self.ranks.world)]
        replies = []
        for o in outs:
            parts = self.ranks.gather(o, sizes)
            if parts is not None:
                replies.append(self._interleave(parts, lengths).numpy().tobytes())
        return {}, replies

    def _interleave(self, parts, lengths):
        """Every rank's outputs (rank r: sequences r, r + N, ...) -> the request's order."""
        world = self.ranks.world
        pieces = [None] * len(lengths)
        for r, part in enumerate(parts):
            o = 0
            for i in range(r, len(lengths), world):
                pieces[i] = part[o : o + lengths[i]]
                o += lengths[i]
        return torch.cat(pieces)

    def _batch(self, flat, lengths):
        """Concatenated int32 sequences -> tokens [B, T] (right-padded with 0) on the device."""
        flat = flat.long()
        tokens = torch.zeros((len(lengths), max(lengths)), dtype=torch.long)
        o = 0
        for b, n in enumerate(lengths):
            tokens[b, :n] = flat[o : o + n]
            o += n
        return tokens.to(self.device)

    def _unpad(self, rows, lengths):
        """[B, T - 1] rows -> concatenated per-sequence float32 arrays with index 0 = 0."""
        parts = []
        rows = rows.float().cpu()
        for b, n in enumerate(lengths):
            parts.append(torch.zeros(1))
            parts.append(rows[b, : n - 1])
        return torch.cat(parts)

    def _pad(self, flat, starts, lengths, rows):
        """The gradients of sequences `rows` out of a concatenated float32 array -> [b, T - 1]."""
        t = max(lengths[i] for i in rows)
        out = torch.zeros((len(rows), t - 1), dtype=self.dtype)
        for b, i in enumerate(rows):
            out[b, : lengths[i] - 1] = flat[starts[i] + 1 : starts[i] + lengths[i]]
        return out.to(self.device)

    def op_backward(self, header, buffers):
        net = self._net(header)
        if net.kind not in self.pending:
            net.backward([])  # raises the contract's message
        lengths, mine = self.pending.pop(net.kind)
        if not mine:
            if self.sharded:  # the idle sequence's zero gradient: FSDP reduces in every rank's backward
                zero = torch.zeros((1, IDLE_LENGTHS[0] - 1), dtype=self.dtype, device=self.device)
                net.backward([zero] + [None] * (len(net.pending[0]) - 1))
            return {}, []  # this rank ran no sequence: its gradient share is zero
        starts = _starts(lengths)
        grads = [
            self._pad(torch.frombuffer(bytearray(b), dtype=torch.float32, count=sum(lengths)), starts, lengths, mine)
            for b in buffers
        ]
        if net.kind == "policy" and len(grads) == 1:
            grads.append(None)  # no entropy gradient
        net.backward(grads)
        return {}, []

    def op_step(self, header, buffers):
        net = self._net(header)
        if not self.sharded:  # sharded gradients were already reduced by FSDP in backward
            self.ranks.all_reduce_grads(net.optimizer.params)
        norm, lr = net.step()
        # JSON has no NaN / Infinity: a non-finite norm travels as a string the client parses.
        return {"gradNorm": norm if norm == norm and abs(norm) != float("inf") else str(norm), "lr": lr}, []

    def op_pull(self, header, buffers):
        """Weights (and with optimizer: true, AdamW moments and step) in crl's flat layout."""
        net = self._net(header)
        if self.ranks.rank != 0 and not self.sharded:
            return {}, []  # only rank 0 answers; every rank holds the same weights
        what = ("params", "m", "v") if header.get("optimizer") else ("params",)
        bufs = [net.flat(w) for w in what]  # sharded: every rank sends its rows to rank 0
        if self.ranks.rank != 0:
            return {}, []
        return {"step": net.optimizer.step_count}, bufs

    def op_save_hf(self, header, buffers):
        """The policy as a Hugging Face directory: config.json + model.safetensors (float32; with
        LoRA adapters, the base plus (alpha / r) B A)."""
        out = header["dir"]
        net = self._net({"net": "policy"})
        if self.ranks.rank != 0 and not self.sharded:
            return {}, []  # one writer
        full = net.full("params")  # sharded: gathered on rank 0
        if self.ranks.rank != 0:
            return {}, []
        if net.lora is not None:  # the merged weights, as crl's checkpoint of a LoRA run holds
            full = net.lora.merged(net.names, full)
        os.makedirs(out, exist_ok=True)
        tensors = [(n, t.detach().float().cpu()) for n, t in zip(net.names, full)]
        write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(self.model.hf_config, f, indent=2)
            f.write("\n")
        return {"dir": out}, []

    def op_shutdown(self, header, buffers):
        return {"bye": True}, []


def _starts(lengths):
    out, o = [], 0
    for n in lengths:
        out.append(o)
        o += n
    return out
