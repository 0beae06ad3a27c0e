#!/usr/bin/python3
"""Writes the serving workloads' MLP (784-512-512-10, ReLU; shared/WORKLOADS.md) as an ONNX model
for the ONNX Runtime twin (ort_twin.cpp), and next to it MODEL.check: the model's output for the
twin's check input, computed here with numpy, so that the twin can tell a wrong answer (a misread
API slot, say) from a fast one.

    make_mlp_onnx.py MODEL.onnx

Input "x" [N, 784] (N dynamic), output "y" [N, 10], f32. Weights are drawn from a fixed seed as
PyTorch's nn.Linear draws them (uniform in +-1/sqrt(fan_in)). Needs Debian's python3-onnx (and
numpy); no PyTorch.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZES = (784, 512, 512, 10)


def check_input():
    """The twin's check input (ort_twin.cpp computes the same values)."""
    i = np.arange(SIZES[0])
    return (((i * 37) % 101) / 101.0 - 0.5).astype(np.float32)[None, :]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_mlp_onnx.py MODEL.onnx")
    path = sys.argv[1]
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    weights = []
    for layer, (fan_in, fan_out) in enumerate(zip(SIZES, SIZES[1:])):
        bound = 1.0 / np.sqrt(fan_in)
        w = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)
        b = rng.uniform(-bound, bound, (fan_out,)).astype(np.float32)
        weights.append((w, b))
        inits += [numpy_helper.from_array(w, f"w{layer}"), numpy_helper.from_array(b, f"b{layer}")]
        last = layer == len(SIZES) - 2
        out = "y" if last else f"h{layer}"
        nodes.append(helper.make_node("Gemm", [x, f"w{layer}", f"b{layer}"], [out if last else f"g{layer}"]))
        if not last:
            nodes.append(helper.make_node("Relu", [f"g{layer}"], [out]))
        x = out
    graph = helper.make_graph(
        nodes, "mlp_784_512_512_10",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", SIZES[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", SIZES[-1]])],
        inits)
    model = helper.make_model(graph, producer_name="kiln bench", opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)

    h = check_input()
    for layer, (w, b) in enumerate(weights):
        h = h @ w + b
        if layer < len(weights) - 1:
            h = np.maximum(h, 0)
    with open(path + ".check", "w") as f:
        f.write(" ".join(f"{v:.9g}" for v in h[0]) + "\n")


if __name__ == "__main__":
    main()
