"""Reference gradients of the layout primitives, written to grad_layout.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_grad_layout.py
attrs hold the kiln API's arguments (slice's end is a Python slice bound, clamped like one).
"""
import torch
import torch.nn.functional as F

from refgen import write
from rule_refgen_layout import f, grad_case

cases = []


def reshape(name, shape, new_shape):
    cases.append(grad_case(name, "reshape", [f(*shape)], lambda x: x.reshape(new_shape), {"shape": list(new_shape)}))


reshape("reshape_infer", (2, 3, 4), (4, -1))
reshape("reshape_merge", (2, 3, 4), (6, 4))
reshape("reshape_to_0d", (1,), ())


def permute(name, shape, dims):
    cases.append(grad_case(name, "permute", [f(*shape)], lambda x: x.permute(dims), {"dims": list(dims)}))


permute("permute_3d", (2, 3, 4), (2, 0, 1))
permute("permute_negative", (2, 3, 4), (-1, 0, -2))
permute("permute_4d", (2, 1, 3, 2), (3, 1, 0, 2))


def expand(name, shape, new_shape):
    cases.append(grad_case(name, "expand", [f(*shape)], lambda x: x.expand(*new_shape), {"shape": list(new_shape)}))


expand("expand_lead_and_ones", (3, 1), (2, 3, 4))
expand("expand_1d", (1,), (5,))
expand("expand_keep", (3, 1), (2, -1, 4))
expand("expand_0d", (), (2, 3))


def slice_(name, shape, dim, start, end, step):
    def fn(x):
        index = [slice(None)] * x.dim()
        index[dim] = slice(start, end, step)
        return x[tuple(index)]
    attrs = {"dim": dim, "start": start, "end": end, "step": step}
    cases.append(grad_case(name, "slice", [f(*shape)], fn, attrs))


slice_("slice_step1", (5, 4), 0, 1, 3, 1)
slice_("slice_step2", (7,), 0, 1, 6, 2)
slice_("slice_step3_negative_dim", (5, 8), -1, -7, 100, 3)
slice_("slice_step4_middle", (4, 6, 5), 1, 0, 6, 4)
slice_("slice_step_exact_end", (3, 7), 1, 1, 7, 3)
slice_("slice_step_past_size", (5, 2), 0, 0, 5, 10)
slice_("slice_empty", (3, 6), 1, 5, 2, 1)
slice_("slice_negative_bounds", (2, 9, 2), -2, -8, -1, 2)
slice_("slice_step_on_size1", (1, 4), 0, 0, 1, 3)


def cat(name, shapes, dim):
    xs = [f(*s) for s in shapes]
    cases.append(grad_case(name, "cat", xs, lambda *t: torch.cat(t, dim), {"dim": dim}, grads=tuple(range(len(xs)))))


cat("cat_three_dim1", [(2, 3), (2, 1), (2, 4)], 1)
cat("cat_three_dim0", [(1, 3), (4, 3), (2, 3)], 0)
cat("cat_negative_dim", [(2, 2, 3), (2, 2, 1), (2, 2, 2)], -1)
cat("cat_skips_empty_1d", [(2, 3), (0,), (1, 3)], 0)
cat("cat_empty_part", [(2, 0, 3), (2, 2, 3), (2, 1, 3)], 1)


def flip(name, shape, dims):
    cases.append(grad_case(name, "flip", [f(*shape)], lambda x: x.flip(dims), {"dims": list(dims)}))


flip("flip_two_dims", (2, 3, 4), (0, 2))
flip("flip_negative", (3, 4), (-1,))


def repeat(name, shape, reps):
    cases.append(grad_case(name, "repeat", [f(*shape)], lambda x: x.repeat(*reps), {"repeats": list(reps)}))


repeat("repeat_2d", (2, 3), (2, 1))
repeat("repeat_lead", (2, 3), (3, 2, 2))
repeat("repeat_ones", (1, 3), (4, 1))
repeat("repeat_zero", (2, 3), (0, 2))
repeat("repeat_past_max_rank", (2, 1, 2, 1, 2), (2, 2, 1, 3, 2))


def pad(name, shape, pads, value=0.0):
    cases.append(grad_case(name, "pad", [f(*shape)], lambda x: F.pad(x, pads, value=value),
                           {"pads": list(pads), "value": value}))


pad("pad_last", (3, 4), (1, 2))
pad("pad_two_dims", (2, 3, 4), (1, 0, 2, 1), 1.5)
pad("pad_negative", (4, 5), (-1, 2, 0, -2))
pad("pad_all_dims", (2, 3, 4), (1, 1, -1, 1, 0, 1))
pad("pad_crop_to_empty", (2, 3), (-2, -1))


def triangle(name, op, shape, diagonal):
    fn = torch.tril if op == "tril" else torch.triu
    cases.append(grad_case(name, op, [f(*shape)], lambda x: fn(x, diagonal), {"diagonal": diagonal}))


triangle("tril_square", "tril", (4, 4), 0)
triangle("tril_batched_below", "tril", (2, 3, 4), -1)
triangle("triu_wide", "triu", (4, 5), 2)
triangle("triu_tall", "triu", (5, 3), 1)

write("grad_layout", cases)
