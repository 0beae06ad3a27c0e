#!/usr/bin/python3
"""The ONNX files of the onnx_* workloads (shared/WORKLOADS.md), exported by PyTorch with random
weights: torchvision's resnet18 (dynamic batch) and a 4-layer transformer encoder (d 256, 4 heads,
ff 1024, seq 128, batch 1).

Usage: bench/onnx/make_models.py OUT_DIR   -> OUT_DIR/resnet18.onnx, OUT_DIR/encoder.onnx
"""
import inspect
import os
import sys

import torch
import torchvision


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # PyTorch 2.9 and later export through torch.export by default, into opsets kiln's importer
    # (7 to 17) does not read: ask for the TorchScript exporter, as PyTorch 1.13 has it.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18().eval()
    torch.onnx.export(resnet, (torch.randn(1, 3, 224, 224),), os.path.join(out, "resnet18.onnx"),
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=13, **legacy)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=4).eval()
    torch.onnx.export(encoder, (torch.randn(1, 128, 256),), os.path.join(out, "encoder.onnx"),
                      input_names=["x"], output_names=["output"], opset_version=14, **legacy)


if __name__ == "__main__":
    main()
