"""The built-in Llama / Qwen3 network (used where transformers is not importable).

A functional twin of src/model/network/llama-block.ts and transformer.ts over named parameters (the
Hugging Face names src/model/network/weights.ts lays out), so weights cross the wire by name;
modules.py runs it as one nn.Module per decoder layer, which is what FSDP shards.
Legend: B = sequences, T = longest sequence, C = dModel, H = query heads, Hkv = key/value heads,
D = head size, F = mlpHidden, V = vocabulary.
"""

import math

import torch


def rmsnorm(x, weight, eps):
    """out = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps) (tensor/rmsnorm.ts)."""
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return x * rstd * weight


def rope_tables(cos_buf, sin_buf, positions, half, dtype, device):
    """cos / sin [P, D/2]: crl sends its own table (tensor/rope.ts, scaling applied), so both
    engines rotate by the same float32 numbers."""
    def load(buf):
        t = torch.frombuffer(bytearray(buf), dtype=torch.float32, count=positions * half)
        return t.view(positions, half).to(dtype=dtype, device=device)

    return load(cos_buf), load(sin_buf)


def rotate(x, cos, sin):
    """Hugging Face rotate_half layout: element i pairs with i + D/2. x [B, T, heads, D]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c = cos[None, : x.shape[1], None, :]
    s = sin[None, : x.shape[1], None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


class Shape:
    """The widths of a crl ModelConfig (src/model/network/config.ts attentionShape)."""

    def __init__(self, cfg):
        self.c = cfg["dModel"]
        self.layers = cfg["nLayers"]
        self.h = cfg["nHeads"]
        self.hkv = cfg.get("nKvHeads") or self.h
        self.d = cfg.get("headDim") or self.c // self.h
        self.eps = cfg["normEps"]
        self.qk_norm = bool(cfg.get("qkNorm"))
        self.tied = bool(cfg["tiedEmbeddings"])


def causal_mask(t, dtype, device):
    """[T, T]: -inf above the diagonal, so row t attends to positions <= t."""
    return torch.full((t, t), float("-inf"), dtype=dtype, device=device).triu(1)


def project(p, name, h, lora_scale):
    """h @ W^T for the projection `name` (e.g. `self_attn.q_proj`). Where LoRA adapters sit on it
    (lora.py: `name.lora_A.weight` [r, I], `name.lora_B.weight` [O, r]), plus
    lora_scale (h A^T) B^T: PEFT's unmerged form, so the frozen W gets no gradient of its own."""
    out = h @ p[name + ".weight"].t()
    a = p.get(name + ".lora_A.weight")
    if a is not None:
        out = out + ((h @ a.t()) @ p[name + ".lora_B.weight"].t()) * lora_scale
    return out


def layer(p, shape, x, cos, sin, mask, lora_scale=0.0):
    """One decoder layer over its own parameters (names relative to `model.layers.N.`):
    x [B, T, C] -> [B, T, C]; causal attention inside each row."""
    b, t, _ = x.shape
    group = shape.h // shape.hkv
    h = rmsnorm(x, p["input_layernorm.weight"], shape.eps)
    q = project(p, "self_attn.q_proj", h, lora_scale).view(b, t, shape.h, shape.d)
    k = project(p, "self_attn.k_proj", h, lora_scale).view(b, t, shape.hkv, shape.d)
    v = project(p, "self_attn.v_proj", h, lora_scale).view(b, t, shape.hkv, shape.d)
    if shape.qk_norm:
        q = rmsnorm(q, p["self_attn.q_norm.weight"], shape.eps)
        k = rmsnorm(k, p["self_attn.k_norm.weight"], shape.eps)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    if group > 1:  # query head j reads key/value head j // group
        k = k.repeat_interleave(group, dim=2)
        v = v.repeat_interleave(group, dim=2)
    q, k, v = (a.transpose(1, 2) for a in (q, k, v))  # [B, H, T, D]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(shape.d) + mask
    att = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, shape.h * shape.d)
    x = x + project(p, "self_attn.o_proj", att, lora_scale)
    h2 = rmsnorm(x, p["post_attention_layernorm.weight"], shape.eps)
    gate = project(p, "mlp.gate_proj", h2, lora_scale)
    up = project(p, "mlp.up_proj", h2, lora_scale)
    return x + project(p, "mlp.down_proj", torch.nn.functional.silu(gate) * up, lora_scale)


def policy_head(p, shape, hidden, tokens, unknown, unknown_logit):
    """Per-row log-prob of the next token and the entropy [B, T - 1] (tensor/logprob.ts)."""
    w = p["model.embed_tokens.weight"] if shape.tied else p["lm_head.weight"]
    return token_stats(hidden[:, :-1] @ w.t(), tokens, unknown, unknown_logit)


def token_stats(logits, tokens, unknown, unknown_logit):
    """logits [B, T - 1, V] of rows 0..T-2 -> log-prob of tokens[:, 1:] and the entropy, [B, T - 1]."""
    if unknown is not None:  # a trimmed vocabulary pins its unknown slot (model/tokenizer/vocab-map.ts)
        idx = torch.tensor([unknown], device=logits.device)
        logits = logits.index_fill(-1, idx, unknown_logit)
    logp = torch.log_softmax(logits, dim=-1)
    lp = logp.gather(-1, tokens[:, 1:, None]).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1)
    return lp, ent


def value_head(p, hidden):
    """V(x[<t]) read from row t - 1: [B, T - 1] (model/network/critic.ts)."""
    return (hidden[:, :-1] @ p["score.weight"].t()).squeeze(-1) + p["score.bias"][0]
