"""Reference gradients of matmul, written to grad_linalg.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_grad_linalg.py
Covers torch.matmul's cases: dot, matrix-vector both ways, matrix product, batched, batch dims
broadcast on either side or both, and dims of size 1 (outer products).
"""
import torch

from refgen import write
from rule_refgen_layout import f, grad_case

cases = []


def matmul(name, a_shape, b_shape):
    cases.append(grad_case(name, "matmul", [f(*a_shape), f(*b_shape)], torch.matmul, grads=(0, 1)))


matmul("matmul_dot", (4,), (4,))
matmul("matmul_mv", (3, 4), (4,))
matmul("matmul_vm", (4,), (4, 5))
matmul("matmul_mm", (3, 4), (4, 5))
matmul("matmul_outer", (3, 1), (1, 5))
matmul("matmul_column_row", (1, 4), (4, 1))
matmul("matmul_batched", (2, 3, 4), (2, 4, 5))
matmul("matmul_batched_mm", (2, 3, 4), (4, 5))
matmul("matmul_mm_batched", (3, 4), (2, 4, 5))
matmul("matmul_vector_batched", (4,), (2, 4, 3))
matmul("matmul_batched_vector", (2, 3, 4), (4,))
matmul("matmul_broadcast_batch", (2, 1, 3, 4), (3, 4, 2))
matmul("matmul_broadcast_both", (3, 1, 2, 4), (1, 5, 4, 2))
matmul("matmul_broadcast_ones", (1, 2, 3), (4, 3, 1))
matmul("matmul_empty_inner", (3, 0), (0, 2))
matmul("matmul_empty_batch", (0, 2, 3), (3, 4))



# Operands that enter transposed (kiln's MatmulOptions; attrs transpose_a, transpose_b): the
# gradients are those of the operands as stored.
def matmul_t(name, a_shape, b_shape, ta, tb):
    def fn(a, b):
        return torch.matmul(a.transpose(-1, -2) if ta else a, b.transpose(-1, -2) if tb else b)
    cases.append(grad_case(name, "matmul_t", [f(*a_shape), f(*b_shape)], fn, attrs=dict(transpose_a=ta, transpose_b=tb),
                           grads=(0, 1)))


matmul_t("matmul_t_b", (3, 4), (5, 4), False, True)
matmul_t("matmul_t_a", (4, 3), (4, 5), True, False)
matmul_t("matmul_t_both", (4, 3), (5, 4), True, True)
matmul_t("matmul_t_vector_b", (4,), (5, 4), False, True)
matmul_t("matmul_t_batched_b", (2, 3, 4), (2, 5, 4), False, True)
matmul_t("matmul_t_batched_times_shared_b", (2, 3, 4), (5, 4), False, True)
matmul_t("matmul_t_batched_a_shared_b", (2, 4, 3), (4, 5), True, False)
matmul_t("matmul_t_broadcast_both", (3, 1, 4, 2), (1, 5, 2, 4), True, True)
matmul_t("matmul_t_column", (3, 4), (1, 4), False, True)

write("grad_linalg", cases)
