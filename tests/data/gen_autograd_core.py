"""Reference gradients for the autograd core's tests, written to autograd_core.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_autograd_core.py
Each case's inputs are the forward inputs (in the order the C++ test uses them) and its outputs
are the gradients PyTorch computes for the inputs the test marks with require_grad. Inputs are
multiples of 1/8; compare with rtol 1e-5, atol 1e-6.
"""
import torch

from refgen import case, write

torch.manual_seed(0)


def r(*shape):
    return torch.randint(-12, 13, shape).float() / 8


def grads(loss, params, seed=None):
    return list(torch.autograd.grad(loss, params, grad_outputs=seed))


cases = []

# MLP: out = sigmoid(relu(x @ W1 + b1) @ W2 + b2); loss = mean(out) + sum(exp(W2 * 0.5)).
x, w1, b1, w2, b2 = r(4, 3), r(3, 5), r(5), r(5, 2), r(2)
ps = [p.requires_grad_() for p in (w1, b1, w2, b2)]
h = torch.relu(x @ w1 + b1)
loss = torch.sigmoid(h @ w2 + b2).mean() + torch.exp(w2 * 0.5).sum()
cases.append(case("mlp", "mlp", [x, w1, b1, w2, b2], grads(loss, ps)))

# A tensor used several times: loss = sum((x * x + exp(x)) * x - x).
x = r(6).requires_grad_()
loss = ((x * x + torch.exp(x)) * x - x).sum()
cases.append(case("diamond", "diamond", [x], grads(loss, [x])))

# Broadcasting: loss = sum((a + b) * c), a [2, 3], b [3], c [2, 1].
a, b, c = r(2, 3).requires_grad_(), r(3).requires_grad_(), r(2, 1).requires_grad_()
loss = ((a + b) * c).sum()
cases.append(case("broadcast", "broadcast", [a, b, c], grads(loss, [a, b, c])))

# A non-scalar output with a seed gradient: y = sigmoid(x) * 2, backward(y, seed).
x, seed = r(2, 3).requires_grad_(), r(2, 3)
cases.append(case("seeded", "seeded", [x, seed], grads(torch.sigmoid(x) * 2.0, [x], seed)))

# Layout: loss = sum(reshape(transpose(x, 0, 1), [6]) * w).
x, w = r(2, 3).requires_grad_(), r(6).requires_grad_()
loss = (x.transpose(0, 1).reshape(6) * w).sum()
cases.append(case("layout", "layout", [x, w], grads(loss, [x, w])))

# End to end, with the real rule table: a classifier's cross-entropy.
# logits = relu(x @ W1 + b1) @ W2 + b2; loss = -mean(sum(log_softmax(logits, -1) * onehot, 1)).
x, w1, b1, w2, b2 = r(8, 6), r(6, 7), r(7), r(7, 4), r(4)
onehot = torch.nn.functional.one_hot(torch.randint(0, 4, (8,)), 4).float()
ps = [p.requires_grad_() for p in (w1, b1, w2, b2)]
logits = torch.relu(x @ w1 + b1) @ w2 + b2
loss = -(torch.log_softmax(logits, -1) * onehot).sum(1).mean()
cases.append(case("mlp_xent", "mlp_xent", [x, onehot, w1, b1, w2, b2], grads(loss, ps)))

write("autograd_core", cases)
