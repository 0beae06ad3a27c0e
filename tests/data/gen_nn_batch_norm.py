"""Reference cases of batch normalization in training mode (kiln's batch_norm and
batch_norm_backward ops, through nn::batch_norm) for tests/nn/test_batch_norm.cpp.

    /usr/bin/python3 tests/data/gen_nn_batch_norm.py   # writes nn_batch_norm.json

Layout: tests/data/nngen.py. Ops and their attrs:
  batch_norm:           running, affine (bools), momentum, eps; outputs y, then the new running
                        mean and variance when running
  batch_norm_relu_add:  relu(batch_norm(x) + residual), as a ResNet block ends; eps
Shapes cover every rank from [N, C] to [N, C, D, H, W], runs of values per channel shorter and
longer than a vector (with tails), a single image, and data far from zero (mean 300, std 0.02),
where the variance must not come from the difference of two large sums.
"""
import torch
import torch.nn.functional as F

from nngen import nn_case
from refgen import write

torch.manual_seed(0)
cases = []


def rn(*shape, scale=1.0, offset=0.0):
    return (torch.randn(*shape) * scale + offset).float()


def bn(momentum, eps, running, affine):
    def fn(x, *rest):
        rest = list(rest)
        rm, rv = (rest.pop(0), rest.pop(0)) if running else (None, None)
        w, b = (rest.pop(0), rest.pop(0)) if affine else (None, None)
        y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=momentum, eps=eps)
        return (y, rm, rv) if running else y
    return fn


def bn_case(name, x, momentum=0.1, eps=1e-5, running=True, affine=True, fd=False):
    c = x.shape[1]
    inputs = [x] + ([rn(c), torch.rand(c) + 0.5] if running else []) + ([rn(c), rn(c)] if affine else [])
    cases.append(nn_case(name, "batch_norm", bn(momentum, eps, running, affine), inputs, fd=fd,
                         no_grad=(1, 2) if running else (),
                         attrs=dict(running=running, affine=affine, momentum=momentum, eps=eps)))


bn_case("rank2", rn(7, 5, scale=2.0), fd=True)
bn_case("rank3", rn(3, 4, 10))
bn_case("rank4_tails", rn(4, 3, 5, 7), momentum=0.2, fd=True)
bn_case("rank4_long_runs", rn(2, 4, 12, 11, scale=3.0, offset=-1.0))
bn_case("rank5", rn(2, 3, 2, 3, 4), eps=1e-3)
bn_case("one_image", rn(1, 4, 6, 6))
bn_case("no_affine", rn(3, 5, 4, 4), affine=False)
bn_case("no_running", rn(5, 2, 3, 3), running=False)
bn_case("far_from_zero", rn(4, 3, 8, 8, scale=0.02, offset=300.0))


def bn_relu_add(eps):
    def fn(x, w, b, residual):
        return F.relu(F.batch_norm(x, None, None, w, b, training=True, eps=eps) + residual)
    return fn


x = rn(2, 8, 6, 7)
cases.append(nn_case("resnet_tail", "batch_norm_relu_add", bn_relu_add(1e-5), [x, rn(8), rn(8), rn(2, 8, 6, 7)],
                     attrs=dict(eps=1e-5)))

write("nn_batch_norm", cases)
