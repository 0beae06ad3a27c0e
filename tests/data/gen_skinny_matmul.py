"""Reference data for matmuls of a few rows against a large matrix (the CPU's skinny path: 1 to 8
rows, B of at least 32k values, split over the cores; up to 512 rows against a kept, packed weight)
or a narrow one (at most 32 columns, on one thread), written to skinny_matmul.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_skinny_matmul.py
The operands are too large to store, so they are defined by formulas that the test
(tests/ops/test_skinny_matmul.cpp) repeats: multiples of 1/8 small enough that every sum is
exact in f32, whatever the order of summation. Only the products are stored.
"""
import torch

from refgen import case, write


def a_values(m, k):
    i = torch.arange(m).reshape(m, 1)
    p = torch.arange(k).reshape(1, k)
    return ((i * 5 + p * 3) % 17 - 8).float() / 8


def b_values(rows, cols):  # as stored, row-major
    q = torch.arange(rows * cols)
    return ((q * 7) % 19 - 9).float().reshape(rows, cols) / 8


def skinny(name, m, k, n, b_transposed):
    a = a_values(m, k)
    b = b_values(n, k).t() if b_transposed else b_values(k, n)
    out = torch.matmul(a, b)
    return case(name, "skinny_matmul", [], out, dict(m=m, k=k, n=n, transpose_b=b_transposed))


cases = [skinny(f"kn_rows{m}", m, 256, 130, False) for m in (1, 2, 3, 4, 5, 8)]
cases += [skinny(f"nk_rows{m}", m, 260, 130, True) for m in (1, 3, 8)]
cases += [
    skinny("mlp_layer", 1, 784, 512, False),       # the MLP's first layer, as raw ops write it
    skinny("mlp_layer_linear", 2, 784, 512, True),  # and as nn::Linear stores its weight
    skinny("rows9", 9, 256, 130, False),  # one row over the skinny kernels' limit
]
# More rows (the packed product, in passes of 8 rows, the last part full), up to the limit of 512
# rows, and one row over it (OpenBLAS).
cases += [
    skinny("kn_rows37", 37, 256, 130, False),
    skinny("nk_rows130", 130, 260, 130, True),
    skinny("kn_rows512", 512, 64, 64, False),
    skinny("rows513_openblas", 513, 64, 64, False),
]
# Narrow B (at most two vectors of columns: a classifier's last layer), on one thread: one or two
# vectors a row of B, B's last rows from a padded copy, column counts of 1 and of whole vectors.
cases += [skinny(f"narrow_kn_rows{m}", m, 512, 10, False) for m in (1, 3, 8)]
cases += [
    skinny("narrow_kn_two_vectors", 2, 37, 17, False),
    skinny("narrow_kn_whole_vectors", 1, 100, 32, False),
    skinny("narrow_kn_one_column", 5, 16, 1, False),
    skinny("narrow_nk_rows1", 1, 512, 10, True),
    skinny("narrow_nk_rows8", 8, 100, 7, True),
]


# A Linear layer's epilogue on the packed path (the CPU adds the bias, then ReLU, as the packed
# product stores its blocks): relu?(A @ B + bias), bias along the last dim; 130 columns, so the
# last panel is part padding.
def bias_values(n):
    j = torch.arange(n)
    return ((j * 5) % 13 - 6).float() / 8


def linear(name, m, k, n, b_transposed, relu):
    a = a_values(m, k)
    b = b_values(n, k).t() if b_transposed else b_values(k, n)
    out = torch.matmul(a, b) + bias_values(n)
    if relu:
        out = torch.relu(out)
    return case(name, "skinny_linear", [], out, dict(m=m, k=k, n=n, transpose_b=b_transposed, relu=relu, layers=1))


# Two layers, relu(relu(A @ W + b) @ W + b) with W [182, 182] (at least 32k weights): the second
# layer's input is the first's output, a temporary the second consumes.
def two_layers(name, m):
    k = 182
    w, bias = b_values(k, k), bias_values(k)
    h = torch.relu(torch.matmul(a_values(m, k), w) + bias)
    out = torch.relu(torch.matmul(h, w) + bias)
    exact = torch.relu(torch.matmul(torch.relu(torch.matmul(a_values(m, k).double(), w.double()) + bias.double()),
                                    w.double()) + bias.double())
    assert torch.equal(out.double(), exact), "the two-layer case is not exact in f32"
    return case(name, "skinny_linear", [], out, dict(m=m, k=k, n=k, transpose_b=False, relu=True, layers=2))


cases += [
    linear("linear_relu_rows1", 1, 256, 130, False, True),
    linear("linear_rows8", 8, 256, 130, False, False),
    linear("linear_relu_nk_rows3", 3, 260, 130, True, True),
    two_layers("two_layers_rows1", 1),
    two_layers("two_layers_rows4", 4),
    linear("linear_relu_rows40", 40, 256, 130, False, True),  # more rows, on the packed product too
    two_layers("two_layers_rows24", 24),
    linear("linear_narrow_relu_rows1", 1, 512, 10, False, True),  # narrow: on one thread
    linear("linear_narrow_nk_rows3", 3, 512, 10, True, False),
]
write("skinny_matmul", cases)
