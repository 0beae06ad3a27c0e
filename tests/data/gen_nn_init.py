"""Reference data for kiln::nn's initializers (tests/nn/test_init.cpp), written to nn_init.json.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_nn_init.py
torch's random stream cannot be reproduced, so the reference is what defines each
distribution, taken from torch.nn.init's own helpers. Cases have no tensors; attrs hold:
  op "fan":  shape, fan_in, fan_out          (torch.nn.init._calculate_fan_in_and_fan_out)
  op "gain": nonlinearity, param (absent: torch's default), gain   (torch.nn.init.calculate_gain)
  op "init": init, shape and its arguments (a, mode, nonlinearity / gain), and the bound of a
             uniform init or the std of a normal one, as torch.nn.init computes it from
             _calculate_correct_fan / _calculate_fan_in_and_fan_out and calculate_gain. The
             generator also draws torch's own init of that shape and checks its values against
             the bound or std, so a formula copied wrongly here would fail at generation.
"""
import math

import torch
import torch.nn.init as init

from refgen import case, write

torch.manual_seed(2)
cases = []

for shape in ([3, 4], [5, 3, 2], [8, 4, 3, 3], [2, 6, 2, 2, 2], [7, 1]):
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(torch.empty(shape))
    cases.append(case("fan_%s" % "x".join(map(str, shape)), "fan", [], [],
                      dict(shape=shape, fan_in=fan_in, fan_out=fan_out)))

NONLINEARITIES = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]
for nl in NONLINEARITIES:
    cases.append(case("gain_" + nl, "gain", [], [], dict(nonlinearity=nl, gain=init.calculate_gain(nl))))
for param in (0.0, 0.2, math.sqrt(5.0)):
    cases.append(case("gain_leaky_relu_%g" % param, "gain", [], [],
                      dict(nonlinearity="leaky_relu", param=param, gain=init.calculate_gain("leaky_relu", param))))


def check_sample(t, bound=None, std=None):
    if bound is not None:
        assert t.abs().max() <= bound and t.abs().max() > 0.99 * bound, (t.abs().max(), bound)
    else:
        assert abs(t.std().item() / std - 1) < 0.02, (t.std().item(), std)


def kaiming(kind, shape, a, mode, nl):
    t = torch.empty(shape)
    gain = init.calculate_gain(nl, a)
    std = gain / math.sqrt(init._calculate_correct_fan(t, mode))
    attrs = dict(init="kaiming_" + kind, shape=shape, a=a, mode=mode, nonlinearity=nl)
    if kind == "uniform":
        attrs["bound"] = math.sqrt(3.0) * std
        check_sample(init.kaiming_uniform_(t, a, mode, nl), bound=attrs["bound"])
    else:
        attrs["std"] = std
        check_sample(init.kaiming_normal_(t, a, mode, nl), std=std)
    cases.append(case("kaiming_%s_%s_%s_%g_%s" % (kind, "x".join(map(str, shape)), mode, a, nl), "init", [], [], attrs))


def xavier(kind, shape, gain):
    t = torch.empty(shape)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(t)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    attrs = dict(init="xavier_" + kind, shape=shape, gain=gain)
    if kind == "uniform":
        attrs["bound"] = math.sqrt(3.0) * std
        check_sample(init.xavier_uniform_(t, gain), bound=attrs["bound"])
    else:
        attrs["std"] = std
        check_sample(init.xavier_normal_(t, gain), std=std)
    cases.append(case("xavier_%s_%s_%g" % (kind, "x".join(map(str, shape)), gain), "init", [], [], attrs))


LINEAR, CONV = [256, 1024], [128, 64, 3, 3]
for kind in ("uniform", "normal"):
    kaiming(kind, LINEAR, 0.0, "fan_in", "leaky_relu")
    kaiming(kind, LINEAR, math.sqrt(5.0), "fan_in", "leaky_relu")  # nn.Linear's reset_parameters
    kaiming(kind, CONV, 0.0, "fan_out", "relu")
    kaiming(kind, CONV, 0.1, "fan_in", "leaky_relu")
    kaiming(kind, LINEAR, 0.0, "fan_out", "tanh")
    xavier(kind, LINEAR, 1.0)
    xavier(kind, CONV, init.calculate_gain("relu"))

write("nn_init", cases)
