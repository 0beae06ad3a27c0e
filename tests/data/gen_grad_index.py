"""Reference gradients of the index primitives, written to grad_index.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_grad_index.py
scatter's indices never repeat a position (torch leaves that undefined); scatter_add's and
gather's do. When src is larger than index, torch 1.13's scatter backward returns a gradient of
index's shape and fails; the case reads src through a slice of index's shape instead, which is
what scatter reads, so torch gives src's full gradient (zeros where nothing was read).
sort and topk inputs are distinct, so the order (and the finite differences) are well defined.
"""
import torch

from refgen import write
from rule_refgen_layout import distinct, f, grad_case

cases = []


def idx(high, *shape):
    return torch.randint(0, high, shape)


def distinct_along(dim, index_shape, high):
    """An index of index_shape whose entries are distinct along dim (values < high)."""
    dim = dim % len(index_shape)
    moved = list(index_shape)
    n = moved.pop(dim)
    rows = [torch.randperm(high)[:n] for _ in range(int(torch.Size(moved).numel()))]
    return torch.stack(rows).reshape(*moved, n).movedim(-1, dim).contiguous()


def read_part(src, index):
    return src[tuple(slice(0, n) for n in index.shape)] if src.dim() else src


def gather(name, x, dim, index):
    cases.append(grad_case(name, "gather", [x, index], lambda x, i: torch.gather(x, dim, i), {"dim": dim}))


gather("gather_2d_dim1_repeats", f(3, 4), 1, idx(4, 3, 6))
gather("gather_2d_dim0_narrow", f(3, 4), 0, idx(3, 5, 2))
gather("gather_3d_negative", f(2, 3, 6), -1, idx(6, 2, 2, 4))
gather("gather_3d_dim0", f(4, 3, 5), -3, idx(4, 2, 3, 4))
gather("gather_3d_middle", f(2, 5, 4), 1, idx(5, 2, 3, 3))
gather("gather_1d", f(6), 0, idx(6, 9))
gather("gather_0d", torch.tensor(2.5), 0, torch.tensor(0))
gather("gather_0d_input_1d_index", torch.tensor(1.5), -1, torch.tensor([0, 0, 0]))


def scatter(name, op, x, dim, index, src):
    fn = torch.scatter if op == "scatter" else torch.scatter_add
    cases.append(grad_case(name, op, [x, index, src], lambda x, i, s: fn(x, dim, i, read_part(s, i)),
                           {"dim": dim}, grads=(0, 2)))


scatter("scatter_2d_dim1", "scatter", f(3, 5), 1, distinct_along(1, (3, 3), 5), f(3, 3))
scatter("scatter_2d_dim0_src_larger", "scatter", f(4, 3), 0, distinct_along(0, (3, 2), 4), f(3, 3))
scatter("scatter_3d_dim1", "scatter", f(2, 4, 3), 1, distinct_along(1, (2, 2, 3), 4), f(2, 3, 3))
scatter("scatter_3d_negative", "scatter", f(3, 2, 5), -1, distinct_along(-1, (2, 2, 4), 5), f(3, 2, 4))
scatter("scatter_3d_dim0", "scatter", f(4, 2, 3), -3, distinct_along(0, (3, 2, 2), 4), f(3, 2, 2))
scatter("scatter_1d_src_larger", "scatter", f(6), 0, torch.tensor([4, 0, 2]), f(4))
scatter("scatter_0d", "scatter", torch.tensor(1.0), 0, torch.tensor(0), torch.tensor(7.0))
scatter("scatter_empty_index", "scatter", f(3, 4), 1, idx(4, 3, 0), f(1, 1))
scatter("scatter_add_2d_dim1", "scatter_add", f(3, 4), 1, idx(4, 3, 6), f(3, 6))
scatter("scatter_add_2d_dim0_src_larger", "scatter_add", f(3, 4), 0, idx(3, 5, 3), f(5, 4))
scatter("scatter_add_3d_dim1", "scatter_add", f(2, 3, 4), 1, idx(3, 2, 5, 3), f(2, 6, 4))
scatter("scatter_add_3d_negative", "scatter_add", f(2, 3, 4), -1, idx(4, 2, 2, 7), f(2, 3, 7))
scatter("scatter_add_0d", "scatter_add", torch.tensor(1.0), -1, torch.tensor(0), torch.tensor(2.0))


def index_select(name, x, dim, index):
    cases.append(grad_case(name, "index_select", [x, index], lambda x, i: torch.index_select(x, dim, i),
                           {"dim": dim}))


index_select("index_select_dim0_repeats", f(4, 3), 0, torch.tensor([3, 0, 3, 1, 3]))
index_select("index_select_middle", f(2, 5, 3), 1, torch.tensor([4, 4, 0]))
index_select("index_select_negative", f(2, 3, 5), -1, torch.tensor([2, 0, 1, 4, 3, 2]))
index_select("index_select_0d_index", f(3, 4), 1, torch.tensor(2))
index_select("index_select_empty_index", f(3, 4), 0, torch.zeros(0, dtype=torch.long))
index_select("index_select_0d_input", torch.tensor(3.5), 0, torch.tensor([0]))


def masked_fill(name, x, mask, value):
    cases.append(grad_case(name, "masked_fill", [x, mask], lambda x, m: torch.masked_fill(x, m, value),
                           {"value": value}))


def b(*shape):
    return torch.rand(shape) < 0.5


masked_fill("masked_fill_same_shape", f(3, 4), b(3, 4), -1.5)
masked_fill("masked_fill_broadcast_rows", f(2, 3, 4), b(3, 1), 9.0)
masked_fill("masked_fill_broadcast_last", f(2, 3, 4), b(4), 0.25)
masked_fill("masked_fill_0d_mask", f(2, 3), torch.tensor(True), 5.0)


def sort(name, x, dim, descending):
    cases.append(grad_case(name, "sort", [x], lambda x: torch.sort(x, dim=dim, descending=descending, stable=True),
                           {"dim": dim, "descending": descending}))


sort("sort_last", distinct(3, 5), -1, False)
sort("sort_dim0_descending", distinct(4, 3), 0, True)
sort("sort_3d_middle_descending", distinct(2, 5, 3), 1, True)
sort("sort_3d_negative", distinct(2, 3, 4), -3, False)
sort("sort_0d", torch.tensor(2.0), -1, False)


def topk(name, x, k, dim, largest):
    cases.append(grad_case(name, "topk", [x], lambda x: torch.topk(x, k, dim=dim, largest=largest, sorted=True),
                           {"k": k, "dim": dim, "largest": largest}))


topk("topk_largest", distinct(3, 6), 2, -1, True)
topk("topk_smallest_dim0", distinct(6, 4), 3, 0, False)
topk("topk_3d_middle", distinct(2, 5, 3), 4, 1, True)
topk("topk_k_equals_size", distinct(2, 5), 5, -1, False)
topk("topk_k0", distinct(2, 5), 0, -1, True)
topk("topk_0d", torch.tensor(1.5), 1, -1, True)

write("grad_index", cases)
