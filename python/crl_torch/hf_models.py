"""The network as Hugging Face transformers model classes (`--model-impl transformers`, and `auto`
wherever transformers imports).

The policy is the decoder of the class config.json names (Qwen3ForCausalLM or LlamaForCausalLM,
built from crl's own config.json by AutoModelForCausalLM.from_config) and its head; the critic is
the same decoder (AutoModel) with crl's value head, `score` (a bias-carrying [1, C] row,
model/network/critic.ts). The wrappers register the transformers modules under the names the classes use
(`model.layers.3.self_attn.q_proj.weight`, `lm_head.weight`), so init, pull and save_hf speak the
same names as with the built-in network (modules.py), and a saved policy is what
`from_pretrained` loads. Differences from the built-in network: transformers computes its own RoPE
tables from rope_theta and rope_scaling (crl's table is not used), and its attention kernel is
whatever `attn_implementation` the class picks (sdpa on the CPU); the parity bounds of
docs/torch-trainer.md say how far that moves the outputs.
"""

import torch

from . import llama


def version():
    """transformers' version, or None where it cannot be imported (not installed, or broken)."""
    try:
        import transformers
    except Exception:  # noqa: BLE001 - any import failure means the built-in network runs
        return None
    return transformers.__version__


def _config(model, layers):
    """crl's config.json (trainer.Model.hf_config) as a transformers config with `layers` layers
    (a critic may be shallower than the policy, `--critic-layers`)."""
    from transformers import AutoConfig

    raw = dict(model.hf_config)
    raw["num_hidden_layers"] = layers
    raw.pop("architectures", None)
    raw.pop("torch_dtype", None)
    return AutoConfig.for_model(raw.pop("model_type"), **raw)


class Policy(torch.nn.Module):
    """The decoder and lm_head of a *ForCausalLM: per-row log-prob of the next token and entropy."""

    def __init__(self, model, layers):
        super().__init__()
        from transformers import AutoModelForCausalLM

        lm = AutoModelForCausalLM.from_config(_config(model, layers), torch_dtype=torch.float32)
        self.model = lm.model
        self.lm_head = lm.lm_head
        self.tied = model.shape.tied
        self.model_info = model
        self.layers = list(self.model.layers)  # FSDP's units (sharding.shard_network)

    def forward(self, tokens):  # tokens [B, T] -> ([B, T - 1], [B, T - 1])
        m = self.model_info
        hidden = self.model(input_ids=tokens, use_cache=False).last_hidden_state  # [B, T, C]
        logits = self.lm_head(hidden[:, :-1])  # [B, T - 1, V]
        return llama.token_stats(logits, tokens, m.unknown, m.unknown_logit)


class Critic(torch.nn.Module):
    """The decoder of the same class (AutoModel) and crl's value head: V(x[<t]) from row t - 1."""

    def __init__(self, model, layers):
        super().__init__()
        from transformers import AutoModel

        self.model = AutoModel.from_config(_config(model, layers), torch_dtype=torch.float32)
        self.score = torch.nn.Linear(model.shape.c, 1, bias=True)
        self.layers = list(self.model.layers)

    def forward(self, tokens):  # tokens [B, T] -> ([B, T - 1],)
        hidden = self.model(input_ids=tokens, use_cache=False).last_hidden_state
        return (self.score(hidden[:, :-1]).squeeze(-1),)


def build(kind, model, tensors):
    """tensors: [(Hugging Face name, tensor)] -> Policy or Critic holding exactly those tensors."""
    tensors = list(tensors)
    layers = 1 + max((int(n.split(".")[2]) for n, _ in tensors if n.startswith("model.layers.")), default=-1)
    net = (Policy if kind == "policy" else Critic)(model, layers)
    own = dict(net.named_parameters())  # tied weights appear once, under the embedding's name
    given = dict(tensors)
    missing = sorted(set(own) - set(given))
    extra = sorted(set(given) - set(own) - ({"lm_head.weight"} if kind == "policy" and model.shape.tied else set()))
    if missing or extra:
        raise ValueError(f"the {kind}'s tensors do not match {type(net.model).__name__}: missing {missing[:4]}, unexpected {extra[:4]}")
    for name, param in own.items():
        value = given[name]
        if tuple(param.shape) != tuple(value.shape):
            raise ValueError(f"{name}: crl sent {tuple(value.shape)}, {type(net.model).__name__} has {tuple(param.shape)}")
        # The parameter becomes the received tensor (no copy: a 0.6B policy is 2.4 GB of them).
        param.data = value
    if kind == "policy" and model.shape.tied:
        net.lm_head.weight = net.model.embed_tokens.weight
    return net
