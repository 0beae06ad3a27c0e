"""Reference data for kiln::nn's functional ops (tests/nn/test_functional.cpp), written to
nn_functional.json.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_nn_functional.py
Case layout: nngen.py. attrs the C++ side reads to call the kiln function:
  linear, bilinear:           bias (bool: the last tensor input is the bias)
  leaky_relu: slope; elu: alpha; gelu: tanh (bool); prelu, mish: none
  layer_norm, rms_norm:       normalized_shape, weight, bias (bools), eps (absent: the default)
  group_norm:                 groups, weight, bias, eps;  instance_norm: weight, bias
  batch_norm:                 running, weight, bias (bools), training, momentum, eps
  embedding:                  padding_idx (absent: none)
Inputs come in the order of the kiln signature, absent optional tensors skipped.
rms_norm is torch 2.x's F.rms_norm written out (torch 1.13 has none): x * rsqrt(mean(x^2) + eps)
* weight, eps defaulting to torch.finfo(float32).eps.
"""
import torch
import torch.nn.functional as F

from nngen import nn_case
from refgen import write

torch.manual_seed(0)
cases = []


def rn(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def add(name, op, fn, inputs, fd=False, no_grad=(), **attrs):
    cases.append(nn_case(name, op, fn, inputs, attrs, no_grad=no_grad, fd=fd))


# linear: x [..., in], weight [out, in], bias [out]
add("linear_2d", "linear", lambda x, w, b: F.linear(x, w, b), [rn(3, 4), rn(5, 4), rn(5)], fd=True, bias=True)
add("linear_3d_nobias", "linear", lambda x, w: F.linear(x, w), [rn(2, 3, 4), rn(2, 4)], bias=False)
add("linear_1d", "linear", lambda x, w, b: F.linear(x, w, b), [rn(4), rn(3, 4), rn(3)], bias=True)

# bilinear: weight [out, in1, in2]
add("bilinear_2d", "bilinear", lambda a, b, w, c: F.bilinear(a, b, w, c), [rn(3, 4), rn(3, 2), rn(5, 4, 2), rn(5)],
    fd=True, bias=True)
add("bilinear_3d_nobias", "bilinear", lambda a, b, w: F.bilinear(a, b, w), [rn(2, 2, 3), rn(2, 2, 2), rn(2, 3, 2)],
    bias=False)

# Activations, on inputs that include the kink at 0 (no finite differences there) and values
# far out on both sides (elu(100) must not overflow its gradient).
kinked = torch.tensor([[-3.0, -1.0, -0.25, 0.0], [0.0, 0.5, 2.0, 100.0], [-100.0, -0.01, 0.01, 7.0]])
smooth = torch.tensor([[-2.5, -1.25, -0.4, 0.3], [0.7, 1.5, -0.8, 2.2]])
for slope in (0.01, 0.2):
    add("leaky_relu_%g" % slope, "leaky_relu", lambda x, s=slope: F.leaky_relu(x, s), [kinked], slope=slope)
add("leaky_relu_smooth", "leaky_relu", lambda x: F.leaky_relu(x, 0.1), [smooth], fd=True, slope=0.1)
for alpha in (1.0, 0.5):
    add("elu_%g" % alpha, "elu", lambda x, a=alpha: F.elu(x, a), [kinked], alpha=alpha)
add("elu_smooth", "elu", lambda x: F.elu(x, 1.3), [smooth], fd=True, alpha=1.3)
add("prelu_scalar", "prelu", lambda x, w: F.prelu(x, w), [kinked, torch.tensor([0.25])])
add("prelu_channels_4d", "prelu", lambda x, w: F.prelu(x, w), [rn(2, 3, 2, 2), torch.tensor([0.1, -0.3, 0.6])], fd=True)
add("prelu_channels_2d", "prelu", lambda x, w: F.prelu(x, w), [rn(4, 3), torch.tensor([0.2, 0.5, -1.0])])
for tanh in (False, True):
    add("gelu_%s" % ("tanh" if tanh else "erf"), "gelu",
        lambda x, t=tanh: F.gelu(x, approximate="tanh" if t else "none"), [rn(3, 5, scale=2.0)], fd=True, tanh=tanh)
add("mish", "mish", F.mish, [torch.cat([rn(12, scale=3.0), torch.tensor([-30.0, 25.0])])], fd=True)

# layer_norm
add("layer_norm_last", "layer_norm", lambda x, w, b: F.layer_norm(x, [4], w, b),
    [rn(2, 3, 4, scale=2.0), rn(4), rn(4)], fd=True, normalized_shape=[4], weight=True, bias=True)
add("layer_norm_two_dims", "layer_norm", lambda x, w: F.layer_norm(x, [3, 4], w, eps=1e-3),
    [rn(2, 3, 4), rn(3, 4)], normalized_shape=[3, 4], weight=True, bias=False, eps=1e-3)
add("layer_norm_plain", "layer_norm", lambda x: F.layer_norm(x, [5]), [rn(3, 5) + 4.0], normalized_shape=[5],
    weight=False, bias=False)

# group_norm: x [N, C, *]
add("group_norm_3d", "group_norm", lambda x, w, b: F.group_norm(x, 3, w, b), [rn(2, 6, 3), rn(6), rn(6)], fd=True,
    groups=3, weight=True, bias=True)
add("group_norm_4d", "group_norm", lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-3),
    [rn(2, 4, 2, 2), rn(4), rn(4)], groups=2, weight=True, bias=True, eps=1e-3)
add("group_norm_one_group", "group_norm", lambda x: F.group_norm(x, 1), [rn(3, 4, 2)], groups=1, weight=False,
    bias=False)
add("group_norm_per_channel", "group_norm", lambda x, w: F.group_norm(x, 4, w), [rn(2, 4, 3), rn(4)], groups=4,
    weight=True, bias=False)

# instance_norm (statistics of the input itself)
add("instance_norm_3d", "instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
    [rn(2, 3, 4), rn(3), rn(3)], fd=True, weight=True, bias=True)
add("instance_norm_4d_plain", "instance_norm", lambda x: F.instance_norm(x, eps=1e-3), [rn(2, 2, 3, 3)],
    weight=False, bias=False, eps=1e-3)


def rms(x, shape, w=None, eps=None):
    eps = torch.finfo(torch.float32).eps if eps is None else eps
    dims = tuple(range(-len(shape), 0))
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y if w is None else y * w


add("rms_norm_default_eps", "rms_norm", lambda x, w: rms(x, [4], w), [rn(2, 3, 4), rn(4)], fd=True,
    normalized_shape=[4], weight=True, bias=False)
add("rms_norm_two_dims", "rms_norm", lambda x: rms(x, [3, 4], eps=1e-5), [rn(2, 3, 4, scale=0.1)],
    normalized_shape=[3, 4], weight=False, bias=False, eps=1e-5)
# Tiny values: the default eps (1.2e-7) matters against a mean square of about 1e-8.
add("rms_norm_tiny", "rms_norm", lambda x, w: rms(x, [6], w), [rn(2, 6, scale=1e-4), rn(6)], normalized_shape=[6],
    weight=True, bias=False)


# batch_norm: outputs y, then the updated running mean and variance when they are given
def bn(training, momentum=0.1, eps=1e-5, running=True, affine=True):
    def fn(x, *rest):
        rest = list(rest)
        rm, rv = (rest.pop(0), rest.pop(0)) if running else (None, None)
        w, b = (rest.pop(0), rest.pop(0)) if affine else (None, None)
        y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
        return (y, rm, rv) if running else y
    return fn


def bn_case(name, x, training, momentum=0.1, eps=1e-5, running=True, affine=True, fd=False):
    c = x.shape[1]
    inputs = [x] + ([rn(c), torch.rand(c) + 0.5] if running else []) + ([rn(c), rn(c)] if affine else [])
    add(name, "batch_norm", bn(training, momentum, eps, running, affine), inputs, fd=fd,
        no_grad=(1, 2) if running else (), running=running, weight=affine, bias=affine, training=training,
        momentum=momentum, eps=eps)


bn_case("batch_norm_train_2d", rn(5, 3, scale=2.0), True, fd=True)
bn_case("batch_norm_train_4d", rn(2, 3, 2, 2), True, momentum=0.3)
bn_case("batch_norm_train_no_running", rn(4, 2, 3), True, running=False)
bn_case("batch_norm_eval_3d", rn(3, 3, 2), False, fd=True)
bn_case("batch_norm_eval_plain", rn(4, 2), False, eps=1e-3, affine=False)

# embedding: weight [6, 3]; the padding row gets no gradient
idx = torch.tensor([[0, 2, 5, 2], [1, 2, 0, 4]])
add("embedding_2d", "embedding", lambda i, w: F.embedding(i, w), [idx, rn(6, 3)], fd=True)
add("embedding_padding", "embedding", lambda i, w: F.embedding(i, w, padding_idx=2), [idx, rn(6, 3)], padding_idx=2)
add("embedding_padding_negative", "embedding", lambda i, w: F.embedding(i, w, padding_idx=-1),
    [torch.tensor([5, 3, 5, 0, 1]), rn(6, 3)], padding_idx=-1)

write("nn_functional", cases)
