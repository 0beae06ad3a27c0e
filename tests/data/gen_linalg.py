"""Reference data for the linalg family (matmul), written to linalg.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_linalg.py
Inputs are multiples of 1/8 so that the JSON stays short; the large case's sums are then exact in
f32 as well, and the others are compared with rtol 1e-4, atol 1e-4.
"""
import torch

from refgen import case, write

torch.manual_seed(0)


def r(*shape):
    return torch.randint(-16, 17, shape).float() / 8


def mm(name, a_shape, b_shape):
    a, b = r(*a_shape), r(*b_shape)
    return case(name, "matmul", [a, b], torch.matmul(a, b))


cases = [
    mm("dot_1d", (5,), (5,)),
    mm("vec_mat", (4,), (4, 3)),
    mm("mat_vec", (3, 4), (4,)),
    mm("mat_mat", (3, 4), (4, 5)),
    mm("row_times_mat", (1, 4), (4, 5)),
    mm("mat_times_col", (3, 4), (4, 1)),
    mm("batched", (2, 3, 4), (2, 4, 5)),
    mm("batched_times_mat", (2, 3, 4), (4, 5)),
    mm("mat_times_batched", (3, 4), (2, 4, 5)),
    mm("vec_times_batched", (4,), (2, 4, 5)),
    mm("batched_times_vec", (2, 3, 4), (4,)),
    mm("broadcast_batch", (2, 1, 3, 4), (5, 4, 6)),
    mm("broadcast_batch_both", (3, 1, 2, 3), (1, 4, 3, 2)),
    mm("batched_4d", (2, 2, 3, 4), (2, 2, 4, 3)),
    mm("many_small", (64, 3, 4), (64, 4, 5)),
    mm("empty_m", (0, 4), (4, 5)),
    mm("empty_n", (3, 4), (4, 0)),
    mm("empty_k", (3, 0), (0, 5)),
    mm("empty_k_1d", (0,), (0,)),
    mm("empty_batch", (0, 3, 4), (4, 5)),
    mm("empty_k_batched", (2, 3, 0), (2, 0, 4)),
    mm("large", (64, 128), (128, 96)),
]


# Operands entering transposed (MatmulOptions): inputs as stored, attrs say which is transposed.
def mm_t(name, a_shape, b_shape, ta, tb):
    a, b = r(*a_shape), r(*b_shape)
    out = torch.matmul(a.transpose(-1, -2) if ta else a, b.transpose(-1, -2) if tb else b)
    return case(name, "matmul_t", [a, b], out, dict(transpose_a=ta, transpose_b=tb))


cases += [
    mm_t("t_b", (3, 4), (5, 4), False, True),
    mm_t("t_a", (4, 3), (4, 5), True, False),
    mm_t("t_both", (4, 3), (5, 4), True, True),
    mm_t("t_vec_b", (4,), (5, 4), False, True),
    mm_t("t_row_b", (1, 4), (5, 4), False, True),
    mm_t("t_a_col", (4, 3), (4, 1), True, False),
    mm_t("t_batched_b", (2, 3, 4), (2, 5, 4), False, True),
    mm_t("t_batched_shared_b", (6, 3, 4), (5, 4), False, True),
    mm_t("t_batched_a_shared_b", (2, 4, 3), (4, 5), True, False),
    mm_t("t_broadcast_both", (3, 1, 4, 2), (1, 5, 2, 4), True, True),
    mm_t("t_many_small", (64, 4, 3), (64, 5, 4), True, True),
    mm_t("t_large", (128, 64), (96, 128), True, True),
    mm_t("t_large_b", (64, 128), (96, 128), False, True),
    mm_t("t_empty_k", (0, 3), (5, 0), True, True),
]

# An input produced by another matmul.
a, b, c = r(3, 4), r(4, 5), r(5, 2)
cases.append(case("chained", "matmul_chain", [a, b, c], torch.matmul(torch.matmul(a, b), c)))

write("linalg", cases)
