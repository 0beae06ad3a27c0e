"""Reference data for the index family, written to index.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_index.py
Float inputs are multiples of 1/4 (short JSON, and ties for the stability checks of sort).
scatter's indices never repeat a position (torch leaves that undefined); scatter_add's do.
"""
import torch
import torch.nn.functional as F

from refgen import case, write

torch.manual_seed(0)
NAN, INF = float("nan"), float("inf")


def f(*shape):
    return torch.randint(-12, 13, shape).float() / 4


def i(*shape):
    return torch.randint(-50, 50, shape)


def b(*shape):
    return torch.rand(shape) < 0.5


def idx(high, *shape):
    return torch.randint(0, high, shape)


def distinct_along(dim, index_shape, high):
    """An index of index_shape whose entries are distinct along dim (values < high)."""
    dim = dim % len(index_shape)
    moved = list(index_shape)
    n = moved.pop(dim)
    rows = [torch.randperm(high)[:n] for _ in range(int(torch.Size(moved).numel()))]
    t = torch.stack(rows) if rows else torch.zeros(0, n, dtype=torch.long)
    return t.reshape(*moved, n).movedim(-1, dim).contiguous()


cases = []

# gather(x, dim, index)
def gather(name, x, dim, index):
    cases.append(case(name, "gather", [x, index], torch.gather(x, dim, index), {"dim": dim}))

gather("gather_2d_dim1", f(3, 4), 1, idx(4, 3, 6))
gather("gather_2d_dim0", f(3, 4), 0, idx(3, 5, 2))
gather("gather_2d_neg", f(3, 4), -1, idx(4, 2, 3))
gather("gather_3d_dim1", f(2, 5, 4), 1, idx(5, 2, 3, 3))
gather("gather_3d_dim0", f(4, 3, 5), -3, idx(4, 2, 3, 4))
gather("gather_3d_last", f(2, 3, 6), 2, idx(6, 2, 2, 4))
gather("gather_1d", f(6), 0, idx(6, 9))
gather("gather_i64", i(3, 5), 1, idx(5, 3, 2))
gather("gather_bool", b(4, 3), 0, idx(4, 2, 3))
gather("gather_nan", torch.tensor([[1.0, NAN], [INF, -INF]]), 1, torch.tensor([[1, 0], [0, 1]]))
gather("gather_empty_index", f(3, 4), 1, idx(4, 3, 0))
gather("gather_empty_index_larger", f(3, 4), 0, idx(3, 5, 0))
gather("gather_0d", torch.tensor(2.5), 0, torch.tensor(0))
gather("gather_0d_input_1d_index", torch.tensor(1.5), -1, torch.tensor([0, 0, 0]))

# scatter(x, dim, index, src) and scatter_add
def scatter(name, x, dim, index, src, op="scatter"):
    fn = torch.scatter if op == "scatter" else torch.scatter_add
    cases.append(case(name, op, [x, index, src], fn(x, dim, index, src), {"dim": dim}))

scatter("scatter_2d_dim1", f(3, 5), 1, distinct_along(1, (3, 3), 5), f(3, 3))
scatter("scatter_2d_dim0", f(4, 3), 0, distinct_along(0, (3, 2), 4), f(3, 3))
scatter("scatter_3d_dim1", f(2, 4, 3), 1, distinct_along(1, (2, 2, 3), 4), f(2, 3, 3))
scatter("scatter_3d_neg", f(3, 2, 5), -1, distinct_along(-1, (2, 2, 4), 5), f(3, 2, 4))
scatter("scatter_3d_dim0", f(4, 2, 3), -3, distinct_along(0, (3, 2, 2), 4), f(3, 2, 2))
scatter("scatter_i64", i(3, 4), 1, distinct_along(1, (3, 2), 4), i(3, 2))
scatter("scatter_bool", b(5, 2), 0, distinct_along(0, (3, 2), 5), b(3, 2))
scatter("scatter_1d", f(6), 0, torch.tensor([4, 0, 2]), f(4))
scatter("scatter_empty_index", f(3, 4), 1, idx(4, 3, 0), f(1, 1))
scatter("scatter_0d", torch.tensor(1.0), 0, torch.tensor(0), torch.tensor(7.0))

scatter("scatter_add_2d_dim1", f(3, 4), 1, idx(4, 3, 6), f(3, 6), "scatter_add")
scatter("scatter_add_2d_dim0", f(3, 4), 0, idx(3, 5, 4), f(5, 4), "scatter_add")
scatter("scatter_add_3d_dim1", f(2, 3, 4), 1, idx(3, 2, 5, 3), f(2, 6, 4), "scatter_add")
scatter("scatter_add_3d_neg", f(2, 3, 4), -1, idx(4, 2, 2, 7), f(2, 3, 7), "scatter_add")
scatter("scatter_add_i64", i(2, 5), 1, idx(5, 2, 8), i(2, 8), "scatter_add")
scatter("scatter_add_bool", b(2, 4), 1, idx(4, 2, 5), b(2, 5), "scatter_add")
scatter("scatter_add_1d_counts", torch.zeros(4), 0, torch.tensor([1, 3, 1, 1, 0]), torch.ones(5), "scatter_add")
scatter("scatter_add_empty_index", f(2, 3), 0, idx(2, 0, 3), f(2, 3), "scatter_add")
scatter("scatter_add_0d", torch.tensor(1.0), -1, torch.tensor(0), torch.tensor(2.0), "scatter_add")

# index_select(x, dim, index)
def index_select(name, x, dim, index):
    cases.append(case(name, "index_select", [x, index], torch.index_select(x, dim, index), {"dim": dim}))

index_select("index_select_dim0", f(4, 3), 0, torch.tensor([3, 0, 3, 1]))
index_select("index_select_dim1", f(2, 5, 3), 1, torch.tensor([4, 4, 0]))
index_select("index_select_last", f(2, 3, 5), -1, torch.tensor([2, 0, 1, 4, 3, 2]))
index_select("index_select_i64", i(3, 4), 1, torch.tensor([1, 3]))
index_select("index_select_bool", b(5, 2), 0, torch.tensor([4, 1, 1]))
index_select("index_select_empty_index", f(3, 4), 0, torch.zeros(0, dtype=torch.long))
index_select("index_select_0d_index", f(3, 4), 1, torch.tensor(2))
index_select("index_select_0d_input", torch.tensor(3.5), 0, torch.tensor([0]))

# masked_fill(x, mask, value)
def masked_fill(name, x, mask, value):
    # JSON has no NaN/inf literals: non-finite values are written as strings, as refgen does for tensors
    attr = value if value == value and abs(value) != INF else str(value)
    cases.append(case(name, "masked_fill", [x, mask], torch.masked_fill(x, mask, value), {"value": attr}))

masked_fill("masked_fill_same_shape", f(3, 4), b(3, 4), -1.5)
masked_fill("masked_fill_row_mask", f(2, 3, 4), b(3, 1), 9.0)
masked_fill("masked_fill_last_dim_mask", f(2, 3, 4), b(4), 0.25)
masked_fill("masked_fill_middle_mask", f(2, 3, 4), b(2, 1, 4), 2.0)
masked_fill("masked_fill_0d_mask_true", f(2, 3), torch.tensor(True), 5.0)
masked_fill("masked_fill_0d_mask_false", f(2, 3), torch.tensor(False), 5.0)
masked_fill("masked_fill_nan", f(2, 3), b(2, 3), NAN)
masked_fill("masked_fill_neg_inf", f(3, 3), torch.ones(3, 3).triu(1).bool(), -INF)
masked_fill("masked_fill_i64_truncates", i(2, 3), b(2, 3), 2.7)
masked_fill("masked_fill_i64_negative", i(2, 3), b(1, 3), -2.7)
masked_fill("masked_fill_bool", b(3, 3), b(3, 3), 1.0)
masked_fill("masked_fill_empty", f(0, 3), b(3), 1.0)
masked_fill("masked_fill_0d", torch.tensor(1.0), torch.tensor(True), 4.0)

# one_hot(indices, num_classes)
def one_hot(name, indices, classes):
    cases.append(case(name, "one_hot", [indices], F.one_hot(indices, classes), {"num_classes": classes}))

one_hot("one_hot_1d", torch.tensor([0, 2, 1, 2]), 3)
one_hot("one_hot_2d", idx(5, 2, 3), 5)
one_hot("one_hot_0d", torch.tensor(1), 4)
one_hot("one_hot_empty", torch.zeros(0, dtype=torch.long), 3)

# sort(x, dim, descending): torch's stable sort, the order kiln promises
def sort(name, x, dim=-1, descending=False):
    v, ix = torch.sort(x, dim=dim, descending=descending, stable=True)
    cases.append(case(name, "sort", [x], [v, ix], {"dim": dim, "descending": descending}))

sort("sort_ties", f(3, 8).round())
sort("sort_ties_descending", f(3, 8).round(), descending=True)
sort("sort_dim0", f(6, 3), dim=0)
sort("sort_3d_middle", f(2, 5, 3).round(), dim=1, descending=True)
sort("sort_3d_neg", f(2, 3, 4), dim=-3)
nan_row = torch.tensor([[1.0, NAN, -INF, 0.5, NAN, INF, -2.0, 0.5]])
sort("sort_nan_inf", nan_row)
sort("sort_nan_inf_descending", nan_row, descending=True)
sort("sort_i64", torch.randint(-3, 4, (2, 7)))
sort("sort_i64_descending", torch.randint(-3, 4, (2, 7)), dim=1, descending=True)
sort("sort_bool", b(10))
sort("sort_empty", f(0, 3), dim=0)
sort("sort_empty_dim", f(3, 0))
sort("sort_0d", torch.tensor(2.0))

# topk(x, k, dim, largest): distinct values (torch does not fix the order of tied indices)
def distinct(*shape):
    n = int(torch.Size(shape).numel())
    return (torch.randperm(n).float() / 4 - 3).reshape(shape)

def topk(name, x, k, dim=-1, largest=True):
    v, ix = torch.topk(x, k, dim=dim, largest=largest, sorted=True)
    cases.append(case(name, "topk", [x], [v, ix], {"k": k, "dim": dim, "largest": largest}))

topk("topk_largest", distinct(3, 7), 3)
topk("topk_smallest", distinct(3, 7), 3, largest=False)
topk("topk_dim0", distinct(6, 4), 2, dim=0)
topk("topk_3d_middle", distinct(2, 5, 3), 4, dim=1, largest=False)
topk("topk_k_equals_size", distinct(2, 5), 5)
topk("topk_k0", distinct(2, 5), 0)
topk("topk_nan", torch.tensor([[1.0, NAN, 3.0, -INF, 2.0]]), 2)
topk("topk_nan_smallest", torch.tensor([[1.0, NAN, 3.0, -INF, 2.0]]), 2, largest=False)
topk("topk_i64", torch.randperm(12).reshape(3, 4) - 6, 2)
topk("topk_empty", torch.zeros(0, 3), 2)
topk("topk_0d", torch.tensor(1.5), 1)

# An index produced by another op: the indices of topk feed gather.
x = distinct(4, 6)
cases.append(case("topk_then_gather", "topk_then_gather", [x], torch.gather(x, 1, torch.topk(x, 3, dim=1).indices),
                  {"k": 3, "dim": 1}))

write("index", cases)
