"""Reference data for the attention, transformer and positional-encoding tests
(tests/nn/test_attention.cpp, test_transformer.cpp, test_positional.cpp).

Each case builds a torch module (torch.nn.MultiheadAttention, TransformerEncoderLayer, ...),
moves its parameters away from their initial values (so zero biases and unit norm weights are
tested too), runs it in training mode with dropout 0 (torch 1.13's fast paths, which only run in
eval mode, would change the arithmetic) and records its state_dict, inputs, masks, outputs and
the gradients of sum(seed * output) for every parameter and every input. The kiln twin loads the
state by name and must reproduce all of it. Positional encodings and scaled dot-product
attention have no torch 1.13 module or function: their references are written here with torch
ops (float64 for the sinusoid table, whose exact values kiln computes on the host).
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from refgen import tensor_json, write

torch.manual_seed(0)


def perturb(module, scale=0.2):
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape) * scale)


def named(items):
    return [{"name": k, "tensor": tensor_json(v)} for k, v in items]


def grads_of(module, out, inputs, seed):
    params = list(module.named_parameters())
    leaves = [p for _, p in params] + [t for _, t in inputs]
    g = torch.autograd.grad(out, leaves, seed)
    n = len(params)
    return named([(k, v) for (k, _), v in zip(params, g[:n])]), named([(k, v) for (k, _), v in zip(inputs, g[n:])])


def opt(t):
    return None if t is None else tensor_json(t)


def mha_case(name, cfg, q, k=None, v=None, attn_mask=None, key_padding_mask=None, need_weights=True,
             average=True):
    """k and v: None means the query tensor itself (self-attention); v None with k given: v is k."""
    m = nn.MultiheadAttention(cfg["embed_dim"], cfg["num_heads"], bias=cfg.get("bias", True),
                              kdim=cfg.get("kdim"), vdim=cfg.get("vdim"), batch_first=cfg.get("batch_first", False))
    perturb(m)
    m.train()
    q = q.clone().requires_grad_()
    inputs = [("query", q)]
    if k is None:
        k = v = q
    else:
        k = k.clone().requires_grad_()
        inputs.append(("key", k))
        if v is None:
            v = k
        else:
            v = v.clone().requires_grad_()
            inputs.append(("value", v))
    out, weights = m(q, k, v, key_padding_mask=key_padding_mask, need_weights=need_weights,
                     attn_mask=attn_mask, average_attn_weights=average)
    seed = torch.randn(out.shape)
    grads, input_grads = grads_of(m, out, inputs, seed)
    return {"name": name, "kind": "mha", "config": cfg, "state": named(m.state_dict().items()),
            "inputs": named([(n, t) for n, t in inputs]), "attn_mask": opt(attn_mask),
            "key_padding_mask": opt(key_padding_mask), "need_weights": need_weights, "average": average,
            "output": tensor_json(out), "weights": opt(weights), "seed": tensor_json(seed), "grads": grads,
            "input_grads": input_grads, "parameter_count": sum(p.numel() for p in m.parameters())}


def causal(n, s=None):
    s = n if s is None else s
    return torch.ones(n, s, dtype=torch.bool).triu(1)


def layer_cfg(d_model=8, nhead=2, ff=16, activation="relu", norm_first=False, batch_first=False, eps=1e-5):
    return {"d_model": d_model, "nhead": nhead, "dim_feedforward": ff, "activation": activation,
            "norm_first": norm_first, "batch_first": batch_first, "layer_norm_eps": eps}


def encoder_layer(cfg):
    return nn.TransformerEncoderLayer(cfg["d_model"], cfg["nhead"], cfg["dim_feedforward"], 0.0, cfg["activation"],
                                      cfg["layer_norm_eps"], cfg["batch_first"], cfg["norm_first"])


def decoder_layer(cfg):
    return nn.TransformerDecoderLayer(cfg["d_model"], cfg["nhead"], cfg["dim_feedforward"], 0.0, cfg["activation"],
                                      cfg["layer_norm_eps"], cfg["batch_first"], cfg["norm_first"])


def transformer_case(name, kind, cfg, module, inputs, masks, call):
    perturb(module)
    module.train()
    leaves = [(n, t.clone().requires_grad_()) for n, t in inputs]
    out = call(module, *[t for _, t in leaves])
    seed = torch.randn(out.shape)
    grads, input_grads = grads_of(module, out, leaves, seed)
    return {"name": name, "kind": kind, "config": cfg, "state": named(module.state_dict().items()),
            "inputs": named(leaves), "masks": {k: opt(v) for k, v in masks.items()}, "output": tensor_json(out),
            "seed": tensor_json(seed), "grads": grads, "input_grads": input_grads,
            "parameter_count": sum(p.numel() for p in module.parameters())}


def encoder_case(name, cfg, src, num_layers=None, norm=False, mask=None, kpm=None, causal_mask=False):
    layer = encoder_layer(cfg)
    if num_layers is None:
        module, kind = layer, "encoder_layer"
        call = lambda m, x: m(x, src_mask=mask, src_key_padding_mask=kpm)
    else:
        final = nn.LayerNorm(cfg["d_model"], eps=cfg["layer_norm_eps"]) if norm else None
        module, kind = nn.TransformerEncoder(layer, num_layers, final, enable_nested_tensor=False), "encoder"
        call = lambda m, x: m(x, mask=mask, src_key_padding_mask=kpm)
    cfg = dict(cfg, num_layers=num_layers, final_norm=norm, causal=causal_mask)
    return transformer_case(name, kind, cfg, module, [("src", src)], {"src_mask": mask, "src_key_padding_mask": kpm},
                            call)


def decoder_case(name, cfg, tgt, memory, num_layers=None, norm=False, tgt_mask=None, memory_mask=None, tgt_kpm=None,
                 memory_kpm=None, causal_mask=False):
    layer = decoder_layer(cfg)
    if num_layers is None:
        module, kind = layer, "decoder_layer"
    else:
        final = nn.LayerNorm(cfg["d_model"], eps=cfg["layer_norm_eps"]) if norm else None
        module, kind = nn.TransformerDecoder(layer, num_layers, final), "decoder"
    call = lambda m, t, mem: m(t, mem, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_kpm,
                               memory_key_padding_mask=memory_kpm)
    cfg = dict(cfg, num_layers=num_layers, final_norm=norm, causal=causal_mask)
    masks = {"tgt_mask": tgt_mask, "memory_mask": memory_mask, "tgt_key_padding_mask": tgt_kpm,
             "memory_key_padding_mask": memory_kpm}
    return transformer_case(name, kind, cfg, module, [("tgt", tgt), ("memory", memory)], masks, call)


# ---- positional encodings -------------------------------------------------------------------

def sinusoid_table(max_len, d_model):
    """The "Attention is all you need" table in float64: sin at even columns, cos at odd ones."""
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d_model // 2])
    return pe.float()


def sinusoidal_case(name, d_model, max_len, x, offset):
    pe = sinusoid_table(max_len, d_model)
    out = x + pe[offset: offset + x.shape[-2]]
    return {"name": name, "kind": "sinusoidal", "config": {"d_model": d_model, "max_len": max_len, "offset": offset},
            "state": named([("pe", pe)]), "inputs": named([("x", x)]), "output": tensor_json(out)}


def learned_case(name, max_len, d_model, x, offset):
    emb = nn.Embedding(max_len, d_model)
    x = x.clone().requires_grad_()
    positions = torch.arange(offset, offset + x.shape[-2])
    out = x + emb(positions)
    seed = torch.randn(out.shape)
    grads, input_grads = grads_of(emb, out, [("x", x)], seed)
    return {"name": name, "kind": "learned", "config": {"max_len": max_len, "d_model": d_model, "offset": offset},
            "state": named(emb.state_dict().items()), "inputs": named([("x", x)]), "output": tensor_json(out),
            "seed": tensor_json(seed), "grads": grads, "input_grads": input_grads}


def rotary(x, base, offset):
    """GPT-NeoX / LLaMA rotary embedding (rotate_half), as Hugging Face's LLaMA writes it."""
    dim, seq = x.shape[-1], x.shape[-2]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    t = torch.arange(offset, offset + seq).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    x1, x2 = x[..., : dim // 2], x[..., dim // 2:]
    return x * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()


def rotary_case(name, x, base, offset):
    x = x.clone().requires_grad_()
    out = rotary(x, base, offset)
    seed = torch.randn(out.shape)
    (gx,) = torch.autograd.grad(out, [x], seed)
    return {"name": name, "kind": "rotary", "config": {"head_dim": x.shape[-1], "base": base, "offset": offset},
            "inputs": named([("x", x)]), "output": tensor_json(out), "seed": tensor_json(seed),
            "input_grads": named([("x", gx)])}


# ---- scaled dot-product attention (torch 2's F.scaled_dot_product_attention, written out) ----

def sdpa(q, k, v, attn_mask, is_causal, scale):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if is_causal:
        scores = scores.masked_fill(causal(q.shape[-2], k.shape[-2]), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))  # True: may attend
        else:
            scores = scores + attn_mask
    return torch.softmax(scores, -1) @ v


def sdpa_case(name, q, k, v, attn_mask=None, is_causal=False, scale=None):
    leaves = [(n, t.clone().requires_grad_()) for n, t in (("query", q), ("key", k), ("value", v))]
    out = sdpa(*[t for _, t in leaves], attn_mask, is_causal, scale)
    seed = torch.randn(out.shape)
    g = torch.autograd.grad(out, [t for _, t in leaves], seed)
    return {"name": name, "kind": "sdpa", "config": {"is_causal": is_causal, "scale": scale},
            "inputs": named(leaves), "attn_mask": opt(attn_mask), "output": tensor_json(out),
            "seed": tensor_json(seed), "input_grads": named([(n, gi) for (n, _), gi in zip(leaves, g)])}


E, H = 8, 2
cases = [
    # Self-attention (one packed projection), sequence first, no masks, weights averaged.
    mha_case("mha_self", {"embed_dim": E, "num_heads": H}, torch.randn(4, 2, E)),
    # Cross-attention, batch first, key is value; a float [L, S] mask and a bool padding mask;
    # weights per head.
    mha_case("mha_cross_batch_first", {"embed_dim": E, "num_heads": H, "batch_first": True}, torch.randn(2, 3, E),
             torch.randn(2, 5, E), attn_mask=torch.randn(3, 5),
             key_padding_mask=torch.tensor([[False, False, True, False, True], [False] * 4 + [True]]), average=False),
    # Separate key and value sizes (q/k/v_proj_weight); a bool [N * heads, L, S] mask.
    mha_case("mha_kdim_vdim", {"embed_dim": E, "num_heads": 4, "kdim": 6, "vdim": 5}, torch.randn(3, 2, E),
             torch.randn(4, 2, 6), torch.randn(4, 2, 5),
             attn_mask=(torch.rand(2 * 4, 3, 4) < 0.4) & torch.tensor([True, True, True, False])),
    # Unbatched: query [L, E], padding mask [S], a float [heads, L, S] mask; three distinct inputs.
    mha_case("mha_unbatched", {"embed_dim": E, "num_heads": H}, torch.randn(3, E), torch.randn(4, E),
             torch.randn(4, E), attn_mask=torch.randn(H, 3, 4), key_padding_mask=torch.tensor([False, True, False, False])),
    # No biases; the causal mask (kiln: is_causal) with a bool padding mask; no weights returned.
    mha_case("mha_causal_no_bias", {"embed_dim": E, "num_heads": H, "bias": False, "batch_first": True},
             torch.randn(2, 4, E), attn_mask=causal(4), key_padding_mask=torch.tensor([[False] * 4, [False, True] * 2]),
             need_weights=False),
    # A float padding mask is added to the scores (torch 1.13 takes one only without attn_mask).
    mha_case("mha_float_padding", {"embed_dim": E, "num_heads": H}, torch.randn(3, 2, E),
             key_padding_mask=torch.randn(2, 3)),

    encoder_case("encoder_layer_post_relu", layer_cfg(), torch.randn(4, 2, E), mask=torch.randn(4, 4),
                 kpm=torch.tensor([[False, False, False, True], [False, True, False, False]])),
    encoder_case("encoder_layer_pre_gelu", layer_cfg(activation="gelu", norm_first=True, batch_first=True, eps=1e-6),
                 torch.randn(2, 4, E), mask=causal(4), causal_mask=True),
    encoder_case("encoder_stack", layer_cfg(ff=12), torch.randn(3, 2, E), num_layers=2, norm=True,
                 kpm=torch.tensor([[False, False, True], [False, False, False]])),
    decoder_case("decoder_layer_post", layer_cfg(), torch.randn(3, 2, E), torch.randn(5, 2, E), tgt_mask=causal(3),
                 causal_mask=True, tgt_kpm=torch.tensor([[False, False, True], [False, False, False]]),
                 memory_kpm=torch.tensor([[False, False, False, True, True], [False] * 5])),
    decoder_case("decoder_layer_pre_gelu", layer_cfg(activation="gelu", norm_first=True, batch_first=True),
                 torch.randn(2, 3, E), torch.randn(2, 5, E), memory_mask=torch.randn(3, 5)),
    decoder_case("decoder_stack", layer_cfg(ff=12, batch_first=True), torch.randn(2, 3, E), torch.randn(2, 4, E),
                 num_layers=2, norm=True, tgt_mask=causal(3), causal_mask=True),

    sinusoidal_case("sinusoidal_even", 6, 12, torch.randn(2, 5, 6), 0),
    sinusoidal_case("sinusoidal_odd_offset", 5, 40, torch.randn(3, 5), 31),
    learned_case("learned_offset", 8, 4, torch.randn(2, 5, 4), 2),
    rotary_case("rotary_heads", torch.randn(2, 2, 5, 8), 10000.0, 0),
    rotary_case("rotary_offset_base", torch.randn(4, 6), 500.0, 7),

    sdpa_case("sdpa_bool_mask", torch.randn(2, 2, 3, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 6),
              attn_mask=torch.tensor([[True, True, False, True, True], [True, False, True, True, False],
                                      [False, True, True, True, True]])),
    sdpa_case("sdpa_causal_scale", torch.randn(3, 4, 4), torch.randn(3, 4, 4), torch.randn(3, 4, 2), is_causal=True,
              scale=0.3),
    sdpa_case("sdpa_float_mask", torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4),
              attn_mask=torch.randn(2, 1, 5)),
]
write("nn_attention", cases)
