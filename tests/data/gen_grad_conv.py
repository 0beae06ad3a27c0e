"""Reference gradients of unfold and fold, written to grad_conv.json.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_grad_conv.py
attrs hold the kiln API's arguments (as in gen_unfold.py). torch differentiates gen_unfold.py's
reference functions, which work for 1 to 3 spatial dims (F.unfold / F.fold on the 2-d cases);
each op's gradient is the other op, so these cases pin both directions of the adjoint.
"""
import torch.nn.functional as F

from gen_unfold import fold_ref, per_dim, unfold_ref
from refgen import write
from rule_refgen_layout import f, grad_case

cases = []


def window(kernel, dilation, padding, stride):
    return {"kernel": list(kernel), "dilation": list(dilation), "padding": list(padding), "stride": list(stride)}


def unfold(name, shape, kernel, dilation=(1,), padding=(0,), stride=(1,), pad_value=0.0):
    args = (kernel, dilation, padding, stride)
    if len(shape) == 4 and pad_value == 0.0:
        fn = lambda x: F.unfold(x, *[tuple(per_dim(v, 2)) for v in args])
    else:
        fn = lambda x: unfold_ref(x, *args, pad_value)
    cases.append(grad_case(name, "unfold", [f(*shape)], fn, dict(window(*args), pad_value=pad_value)))


def fold(name, n, c, output_size, kernel, dilation=(1,), padding=(0,), stride=(1,)):
    args = (kernel, dilation, padding, stride)
    k = 1
    for v in per_dim(kernel, len(output_size)):
        k *= v
    length = unfold_ref(f(1, 1, *output_size), *args).shape[2]
    if len(output_size) == 2:
        fn = lambda x: F.fold(x, tuple(output_size), *[tuple(per_dim(v, 2)) for v in args])
    else:
        fn = lambda x: fold_ref(x, output_size, *args).float()
    cases.append(grad_case(name, "fold", [f(n, c * k, length)], fn, dict(window(*args), output_size=list(output_size))))


unfold("unfold_2d_conv3x3", (2, 2, 4, 5), (3,), padding=(1,))
unfold("unfold_2d_strided_dilated", (1, 2, 7, 6), (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3))
unfold("unfold_2d_gaps", (1, 1, 7, 7), (2,), stride=(3,))
unfold("unfold_2d_pad_value", (1, 2, 3, 3), (2,), padding=(1,), pad_value=-1.5)
unfold("unfold_1d", (2, 3, 9), (3,), dilation=(2,), padding=(1,), stride=(2,))
unfold("unfold_3d", (1, 2, 3, 4, 3), (2, 2, 1), padding=(1, 0, 0), stride=(1, 2, 1))
unfold("unfold_2d_empty_batch", (0, 2, 4, 4), (3,), padding=(1,))

fold("fold_2d_conv3x3", 2, 2, (4, 5), (3,), padding=(1,))
fold("fold_2d_strided_dilated", 1, 2, (7, 6), (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3))
fold("fold_2d_gaps", 1, 1, (7, 7), (2,), stride=(3,))
fold("fold_1d", 2, 3, (9,), (3,), dilation=(2,), padding=(1,), stride=(2,))
fold("fold_3d", 1, 2, (3, 4, 3), (2, 2, 1), padding=(1, 0, 0), stride=(1, 2, 1))
fold("fold_2d_empty_batch", 0, 2, (4, 4), (3,), padding=(1,))

write("grad_conv", cases)
