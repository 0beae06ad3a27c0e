"""Reference data for fused reductions and matmuls (a prologue or epilogue fused around them),
written to fusion.json. The kiln test (tests/scheduler/test_fusion_anchor.cpp) builds the same
expressions from separate ops with fusion on, checks they ran as fused kernels, compares with
these values, and compares bit for bit with the same ops run unfused.

Run with a Python that has PyTorch: /usr/bin/python3 tests/data/gen_fusion.py
"""
import torch

from refgen import case, write

torch.manual_seed(0)


def gelu_chain(x):  # the five separate ops of the gelu_fused workload
    return x * ((x * 0.7071067811865476).erf() + 1) * 0.5


x = torch.randn(5, 37)
w = torch.randn(37, 24)
b = torch.randn(24)
r = torch.randn(5, 24)
eps = 1e-5

res = torch.randn(5, 37)
keep = (torch.rand(5, 37) > 0.3).float()
mask = torch.randn(37)
mu = x.mean(-1, keepdim=True)
m = x.max(-1, keepdim=True).values
cases = [
    case("sum_of_squares", "sum(x*x, dim 1)", [x], (x * x).sum(1)),
    case("variance_of_centred", "mean((x - mu)^2, dim 1), mu given", [x, mu], ((x - mu) ** 2).mean(1)),
    case("rms_epilogue", "sqrt(mean(x*x, dim 0) + eps)", [x], ((x * x).mean(0) + eps).sqrt()),
    case("logsumexp_manual", "log(sum(exp(x - m), dim 1)) + m, m given", [x, m],
         (x - m).exp().sum(1).log() + m.squeeze(1)),
    case("max_of_exp", "max(exp(x) - 1, dim 1)", [x], ((x.exp() - 1).max(1).values)),
    case("linear_relu", "relu(x @ w + b)", [x, w, b], torch.relu(x @ w + b)),
    case("layernorm_var", "var(x + res, dim 1, correction 0)", [x, res], (x + res).var(1, unbiased=False)),
    case("std_of_affine", "std(x * 2 - 1, dim 0)", [x], (x * 2 - 1).std(0)),
    case("logsumexp_of_scaled", "logsumexp(x * 0.5, dim 1)", [x], torch.logsumexp(x * 0.5, 1)),
    case("attention_softmax", "softmax(x * 0.125 + mask, dim 1)", [x, mask], torch.softmax(x * 0.125 + mask, 1)),
    case("log_softmax_columns", "log_softmax(x - 1, dim 0)", [x], torch.log_softmax(x - 1, 0)),
    case("softmax_dropout", "softmax(x * 0.5, dim 1) * keep", [x, keep], torch.softmax(x * 0.5, 1) * keep),
    case("linear_gelu_residual", "gelu_chain(x @ w + b) + r", [x, w, b, r], gelu_chain(x @ w + b) + r),
]
write("fusion", cases)
