"""Shared helper of gen_grad_linalg.py, gen_grad_layout.py and gen_grad_index.py: one gradient
case, in refgen.py's JSON layout, read by tests/autograd/rule_check_layout.h.

A gradient case stores
    inputs:  the forward inputs, then one seed gradient per output in attrs["seeded"]
    outputs: torch's gradient of every input listed in attrs["grads"], in that order
    attrs:   the op's arguments as the kiln API takes them, plus "grads" and "seeded"
Inputs not in "grads" (indices, masks) take no gradient.
"""
import torch

from refgen import case

torch.manual_seed(0)


def f(*shape):
    """Floats that are multiples of 1/4 in [-3, 3]: short JSON, exact in f32."""
    return torch.randint(-12, 13, shape).float() / 4


def distinct(*shape):
    """Distinct multiples of 1/4 (no ties for sort and topk, which finite differences need)."""
    n = int(torch.Size(shape).numel())
    return (torch.randperm(n).float() / 4 - n / 8).reshape(shape)


def grad_case(name, op, inputs, fn, attrs=None, grads=(0,), seeded=(0,)):
    leaves = [t.detach().clone().requires_grad_(i in grads) for i, t in enumerate(inputs)]
    outs = fn(*leaves)
    if not isinstance(outs, (list, tuple)):
        outs = (outs,)
    seeds = [f(*outs[k].shape) for k in seeded]
    torch.autograd.backward([outs[k] for k in seeded], seeds)
    result = [leaves[i].grad if leaves[i].grad is not None else torch.zeros_like(leaves[i]) for i in grads]
    attrs = dict(attrs or {}, grads=list(grads), seeded=list(seeded))
    return case(name, op, list(inputs) + seeds, result, attrs)
