"""Shared helper of the gradient reference generators (tests/data/gen_grad_<family>.py).

A gradient case has the layout of tests/support/reference.h with:
  inputs:  the forward op's inputs, then the seed gradient of its output (always last)
  outputs: torch's gradient of each forward input, in order; null for an input that takes none
           (integer or bool inputs, where's condition)
  attrs:   what the C++ side needs to call the kiln op (see each generator), plus
           "fd": whether the case is smooth enough for a finite-difference check (false at
           kinks, ties and bounds, where only torch's convention decides the answer)
"""
import torch

from refgen import case, tensor_json


def grad_case(name, op, fn, inputs, attrs=None, fd=True):
    """Runs fn(*inputs) in torch with gradients on the floating inputs and a random seed."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out = fn(*leaves)
    seed = torch.randn(out.shape)
    wanted = [t for t in leaves if t.requires_grad]
    grads = torch.autograd.grad(out, wanted, seed, allow_unused=True) if wanted else []
    by_leaf = dict(zip([id(t) for t in wanted], grads))
    c = case(name, op, list(inputs) + [seed], [], dict(attrs or {}, fd=fd))
    outputs = []
    for t in leaves:
        g = by_leaf.get(id(t))
        if t.requires_grad and g is None:
            g = torch.zeros_like(t)  # torch's "unused" means a zero gradient
        outputs.append(tensor_json(g) if g is not None else None)
    c["outputs"] = outputs
    return c
