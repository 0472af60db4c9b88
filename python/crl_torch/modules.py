"""The network as nn.Modules: one module per decoder layer, one root for the rest.

FSDP gathers a module's parameters in that module's forward hook, so the network has to run
through module calls, not as a function over a dict. The modules only hold parameters and call
llama.py's functions with them; the tree is laid out so `named_parameters()` gives the Hugging
Face names (`model.layers.3.self_attn.q_proj.weight`), which is what init, pull and save_hf
speak. Unsharded, this is exactly the functional network (the same operations in the same
order), so the data-parallel path is unchanged by it.
"""

import torch

from . import llama

LAYERS = "model.layers."


class Layer(torch.nn.Module):
    """Decoder layer N: its parameters under their names relative to `model.layers.N.`."""

    def __init__(self, shape):
        super().__init__()
        self.shape = shape
        self.names = []
        self.lora_scale = 0.0  # alpha / r once LoRA adapters are added (add_lora)

    def forward(self, x, cos, sin, mask):  # x [B, T, C] -> [B, T, C]
        return llama.layer(_lookup(self, self.names), self.shape, x, cos, sin, mask, self.lora_scale)


class Network(torch.nn.Module):
    """Embedding, the layers, the final norm and the head (policy: log-probs and entropies;
    critic: values)."""

    def __init__(self, kind, model):
        super().__init__()
        self.kind = kind
        self.model_info = model
        self.names = []  # the root's own parameters (full names), not the layers'
        self.layers = []  # Layer modules in order (also registered under model.layers.N)

    def forward(self, tokens):  # tokens [B, T] -> tuple of [B, T - 1]
        m = self.model_info
        p = _lookup(self, self.names)
        x = p["model.embed_tokens.weight"][tokens]  # [B, T, C]
        mask = llama.causal_mask(tokens.shape[1], x.dtype, x.device)
        for layer in self.layers:
            x = layer(x, m.cos, m.sin, mask)
        hidden = llama.rmsnorm(x, p["model.norm.weight"], m.shape.eps)
        if self.kind == "policy":
            return llama.policy_head(p, m.shape, hidden, tokens, m.unknown, m.unknown_logit)
        return (llama.value_head(p, hidden),)


def build(kind, model, tensors):
    """tensors: [(Hugging Face name, tensor)] -> Network whose named_parameters() are those names."""
    root = Network(kind, model)
    layers = {}
    for name, value in tensors:
        if name.startswith(LAYERS):
            index, _, rest = name[len(LAYERS) :].partition(".")
            if index not in layers:
                layers[index] = Layer(model.shape)
                _place(root, LAYERS + index, layers[index])
            owner, local = layers[index], rest
            owner.names.append(rest)
        else:
            owner, local = root, name
            root.names.append(name)
        path, _, leaf = local.rpartition(".")
        _container(owner, path).register_parameter(leaf, torch.nn.Parameter(value))
    root.layers = [layers[i] for i in sorted(layers, key=int)]
    return root


def add_lora(root, projections, tensors, scale):
    """LoRA adapters on a built network: for projection k (its full name, e.g.
    `model.layers.0.self_attn.q_proj`), tensors[2k] is A and tensors[2k + 1] is B, registered as
    `<projection>.lora_A.weight` / `.lora_B.weight` (PEFT's names without its adapter name) in the
    layer that owns the projection, where llama.project adds them. Returns the new parameters in
    that order."""
    params = []
    for k, name in enumerate(projections):
        if not name.startswith(LAYERS):
            raise ValueError(f"LoRA adapts decoder-layer projections only, not {name}")
        index, _, rest = name[len(LAYERS) :].partition(".")
        layer = root.get_submodule(LAYERS + index)
        if rest + ".weight" not in layer.names:
            raise ValueError(f"the network has no {name}.weight to adapt")
        for which, value in (("lora_A", tensors[2 * k]), ("lora_B", tensors[2 * k + 1])):
            param = torch.nn.Parameter(value)
            _container(layer, f"{rest}.{which}").register_parameter("weight", param)
            layer.names.append(f"{rest}.{which}.weight")
            params.append(param)
        layer.lora_scale = scale
    return params


def _lookup(module, names):
    """The parameters as registered now: FSDP swaps in the gathered tensors during forward."""
    return {n: module.get_parameter(n) for n in names}


def _container(module, path):
    """The submodule at a dotted path, created as an empty nn.Module where missing."""
    for part in path.split(".") if path else []:
        if not hasattr(module, part):
            module.add_module(part, torch.nn.Module())
        module = getattr(module, part)
    return module


def _place(root, path, child):
    parent, _, leaf = path.rpartition(".")
    _container(root, parent).add_module(leaf, child)
