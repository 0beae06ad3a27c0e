"""Shared helper of the nn reference generators (gen_nn_functional.py, gen_nn_loss.py).

A case has the layout of tests/support/reference.h with:
  inputs:  the function's tensor inputs (f32 or i64), then the seed gradient of its first
           output (always last)
  outputs: the function's outputs (attrs["outputs"] of them), then torch's gradient of each
           input in order: null where the input takes none (integers, running statistics, and
           inputs listed in no_grad, e.g. where torch's gradient convention differs on purpose)
  attrs:   the arguments the C++ side passes besides the tensors (see each generator), plus
           "fd": whether the function is smooth enough at these inputs for finite differences
Forward values and gradients are computed in float64 from the f32 inputs and stored as f32:
the reference is the exact value that kiln's f32 arithmetic approaches.
"""
import torch

from refgen import case, tensor_json


def nn_case(name, op, fn, inputs, attrs=None, no_grad=(), fd=False):
    leaves = []
    for i, t in enumerate(inputs):
        if t.is_floating_point():
            t = t.double().clone().requires_grad_(i not in no_grad)
        leaves.append(t)
    out = fn(*leaves)
    outs = list(out) if isinstance(out, tuple) else [out]
    seed = torch.randn(outs[0].shape).float()
    wanted = [t for t in leaves if t.is_floating_point() and t.requires_grad]
    grads = torch.autograd.grad(outs[0], wanted, seed.double(), allow_unused=True) if wanted else []
    by_leaf = {id(t): g for t, g in zip(wanted, grads)}
    c = case(name, op, list(inputs) + [seed], [o.detach().float() for o in outs],
             dict(attrs or {}, outputs=len(outs), fd=fd))
    for t in leaves:
        if t.is_floating_point() and t.requires_grad:
            g = by_leaf[id(t)]
            c["outputs"].append(tensor_json((torch.zeros_like(t) if g is None else g).float()))
        else:
            c["outputs"].append(None)
    return c
