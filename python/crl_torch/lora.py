"""LoRA adapters on the policy's frozen base (`crl train --trainer torch --lora-rank R`, docs/lora.md).

Each adapted projection W0 [O, I] stays frozen and the policy computes W0 x + s B A x with
A [r, I], B [O, r] and s = alpha / r, PEFT's unmerged form with dropout 0: no weight gradient
of the base is formed, and A and B are the only tensors AdamW steps (net.py), so the clipping
norm is theirs, as in the embedded adapter (src/model/lora/lora-adapter.ts).

crl sends A and B (A drawn by crl from the run's seed, B zero at a start; the saved ones on a
resume) with their AdamW moments, as flat float32 buffers in crl's layout: matrix by matrix in
the order of `matrices`, A then B. So both trainers start from the same adapters, pull sends them
back in that layout (crl merges them onto its own copy of the base for the sampler and the
checkpoint), and the base is never sent back.

Two ways to run them: on transformers' model classes through PEFT (`inject_adapter_in_model`,
whose LoRA layers compute exactly that sum) where peft imports; on the built-in network by
registering A and B beside each projection's weight, which llama.project adds.
"""

import torch

from . import modules


def peft_version():
    """peft's version, or None where it cannot be imported."""
    try:
        import peft
    except Exception:  # noqa: BLE001 - any import failure means no PEFT
        return None
    return peft.__version__


class Adapters:
    """A and B of every adapted projection, and where their AdamW moments start."""

    def __init__(self, spec, buffers, device):
        """spec: {rank, alpha, targets, matrices: [{module, out, in}], optim, step}; buffers: flat
        A/B, AdamW m, AdamW v (float32, crl's layout)."""
        self.rank = int(spec["rank"])
        self.alpha = float(spec["alpha"])
        self.scale = self.alpha / self.rank
        self.targets = list(spec["targets"])
        self.modules = [m["module"] for m in spec["matrices"]]
        self.optim = spec["optim"]
        self.step = int(spec["step"])
        r = self.rank
        self.shapes = [s for m in spec["matrices"] for s in ((r, m["in"]), (m["out"], r))]
        total = sum(a * b for a, b in self.shapes)
        flat, m, v = (_floats(b, total, device) for b in buffers)
        # A0, B0, A1, B1, ...: the optimizer's tensors, in crl's order. Each owns its storage (the
        # modules hold them as parameters); the moments stay views of the received buffers.
        self.tensors = [t.clone() for t in _views(flat, self.shapes)]
        self.m, self.v = _views(m, self.shapes), _views(v, self.shapes)
        self.params = []  # the nn.Parameters the network computes with, set by attach
        self.runs_on = None  # 'built-in' or 'peft VERSION'

    def attach(self, root, impl):
        """Puts A and B into the network `root` (modules.Network or an hf_models wrapper) and
        returns their parameters in crl's order. The base must already be frozen."""
        if impl == "transformers":
            self.params = self._attach_peft(root)
            self.runs_on = f"peft {peft_version()}"
        else:
            self.params = modules.add_lora(root, self.modules, self.tensors, self.scale)
            self.runs_on = "built-in"
        for p in self.params:
            p.requires_grad_(True)
        return self.params

    def _attach_peft(self, root):
        from peft import LoraConfig, inject_adapter_in_model

        config = LoraConfig(
            r=self.rank,
            lora_alpha=self.alpha,
            lora_dropout=0.0,
            target_modules=self.targets,
            bias="none",
            init_lora_weights=False,  # crl's A and B replace them below
        )
        inject_adapter_in_model(config, root, adapter_name="default")
        params = []
        for i, name in enumerate(self.modules):
            layer = root.get_submodule(name)
            if abs(float(layer.scaling["default"]) - self.scale) > 1e-12:
                raise RuntimeError(f"{name}: PEFT scales the update by {layer.scaling['default']}, crl by {self.scale}")
            for which, value in (("lora_A", self.tensors[2 * i]), ("lora_B", self.tensors[2 * i + 1])):
                param = getattr(layer, which)["default"].weight
                if tuple(param.shape) != tuple(value.shape):
                    raise ValueError(f"{name}.{which}: crl sent {tuple(value.shape)}, PEFT made {tuple(param.shape)}")
                param.data = value  # the parameter becomes crl's tensor (no copy)
                params.append(param)
        # PEFT adapts every module whose name ends in a target; crl adapts the same set, so a
        # module PEFT added that crl does not know would train silently: refuse it.
        extra = sorted(
            n[: -len(".lora_A.default.weight")]
            for n, _ in root.named_parameters()
            if n.endswith(".lora_A.default.weight") and n[: -len(".lora_A.default.weight")] not in set(self.modules)
        )
        if extra:
            raise RuntimeError(f"PEFT adapted modules crl does not: {extra[:4]}")
        return params

    def flat(self, what):
        """A/B ('params') or their AdamW moments ('m', 'v') as float32 bytes in crl's layout."""
        ts = self.params if what == "params" else getattr(self, what)
        return torch.cat([t.detach().reshape(-1).float().cpu() for t in ts]).numpy().tobytes()

    def merged(self, names, weights):
        """The base's tensors (`weights`, named `names`) with W0 + s B A in every adapted matrix:
        what a saved policy holds (save_hf), as crl's checkpoints hold the merged weights."""
        index = {m + ".weight": i for i, m in enumerate(self.modules)}
        out = []
        for name, w in zip(names, weights):
            i = index.get(name)
            if i is not None:
                a, b = self.params[2 * i].detach(), self.params[2 * i + 1].detach()
                w = (w.double() + self.scale * (b.double() @ a.double())).float()
            out.append(w)
        return out


def _floats(buf, count, device):
    data = buf if isinstance(buf, bytearray) else bytearray(buf)
    return torch.frombuffer(data, dtype=torch.float32, count=count).to(device)


def _views(flat, shapes):
    out, offset = [], 0
    for a, b in shapes:
        out.append(flat[offset : offset + a * b].view(a, b))
        offset += a * b
    return out
