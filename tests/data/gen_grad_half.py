"""Gradient references for models run on f16 and bf16 tensors (tests/autograd/test_half_gradients.cpp).
Written to grad_half.json.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_grad_half.py

Each case is a small model as a mixed-precision user writes it (a linear layer with GELU and a
cross entropy, a layer norm, an attention head, an embedding lookup with gather), its inputs
already rounded to the 16-bit dtype. kiln computes forward and backward in that dtype, each op
rounding its result once (as PyTorch's CUDA kernels do); the reference is PyTorch's gradient of
the same model at the same inputs in float64, the value kiln's rounded arithmetic approaches.
The C++ side compares with an error bound relative to the largest gradient (a few units in the
last place of the dtype per op in the chain) and checks that each gradient has its
parameter's dtype.

inputs:  the model's tensors in the order the C++ side names them (16-bit floats; i64 indices)
outputs: float64 gradients (stored as f32) of the inputs listed in attrs["grads"], in order
"""
import torch
import torch.nn.functional as F

from refgen import case, write

torch.manual_seed(0)
HALVES = {"f16": torch.float16, "bf16": torch.bfloat16}
cases = []


def rnd(dt, *shape, scale=1.0):
    return (torch.randn(*shape) * scale).to(dt)


def add_case(name, fn, inputs, grads):
    """fn(*float64 inputs) -> scalar loss; gradients of the inputs at positions `grads`."""
    leaves = [t.double().requires_grad_(i in grads) if t.is_floating_point() else t for i, t in enumerate(inputs)]
    loss = fn(*leaves)
    g = torch.autograd.grad(loss, [leaves[i] for i in grads])
    cases.append(case(name, name.rsplit("_", 1)[0], inputs, [t.float() for t in g], {"grads": grads}))


for tag, dt in HALVES.items():
    # x @ w1 + b1 -> GELU -> @ w2 + b2 -> cross entropy against one-hot targets.
    x, w1, b1 = rnd(dt, 8, 16), rnd(dt, 16, 32, scale=0.25), rnd(dt, 32, scale=0.1)
    w2, b2 = rnd(dt, 32, 4, scale=0.2), rnd(dt, 4, scale=0.1)
    onehot = F.one_hot(torch.randint(0, 4, (8,)), 4).to(dt)

    def mlp(x, w1, b1, w2, b2, onehot):
        logits = F.gelu(x @ w1 + b1) @ w2 + b2
        return -(F.log_softmax(logits, -1) * onehot).sum(1).mean()
    add_case("mlp_xent_" + tag, mlp, [x, w1, b1, w2, b2, onehot], [0, 1, 2, 3, 4])

    # Layer norm written with mean, var and rsqrt, then a scale and a shift; loss sum(y * r).
    x, g, b, r = rnd(dt, 6, 32, scale=2.0), rnd(dt, 32), rnd(dt, 32), rnd(dt, 6, 32)

    def layer_norm(x, g, b, r):
        mu = x.mean(1, keepdim=True)
        var = x.var(1, unbiased=False, keepdim=True)
        return (((x - mu) * torch.rsqrt(var + 1e-5) * g + b) * r).sum()
    add_case("layer_norm_" + tag, layer_norm, [x, g, b, r], [0, 1, 2])

    # One attention head: softmax(q @ k^T * 0.25) @ v; loss sum(out * r).
    q, k, v, r = rnd(dt, 8, 16), rnd(dt, 8, 16), rnd(dt, 8, 16), rnd(dt, 8, 16)

    def attention(q, k, v, r):
        return ((torch.softmax(q @ k.transpose(0, 1) * 0.25, -1) @ v) * r).sum()
    add_case("attention_" + tag, attention, [q, k, v, r], [0, 1, 2])

    # An embedding lookup (rows repeat) and a gather along dim 1; loss sum(rows^2) + sum(picked * 3).
    table, ids = rnd(dt, 10, 8), torch.tensor([3, 1, 3, 7, 0, 3])
    x, idx = rnd(dt, 4, 6), torch.tensor([[0, 5, 5], [2, 2, 1], [4, 0, 3], [1, 1, 1]])

    def lookup(table, ids, x, idx):
        return (table.index_select(0, ids) ** 2).sum() + (torch.gather(x, 1, idx) * 3).sum()
    add_case("lookup_" + tag, lookup, [table, ids, x, idx], [0, 2])

# Mixed precision: f16 (bf16) inputs and weights, an f32 bias; the sum is f32 (PyTorch's
# promotion), and so is the loss. Each gradient comes back in its input's dtype.
for tag, dt in HALVES.items():
    x, w, b = rnd(dt, 8, 16), rnd(dt, 16, 4, scale=0.25), torch.randn(4) * 0.1

    def mixed(x, w, b):
        return ((x @ w + b) ** 2).mean()
    add_case("mixed_" + tag, mixed, [x, w, b], [1, 2])

write("grad_half", cases)
