#!/usr/bin/python3
"""Real models exported by PyTorch, as ONNX test cases that `kiln-onnx test` runs.

Usage: gen_onnx_torch_models.py OUT_DIR

Writes OUT_DIR/<model>/model.onnx and test_data_set_0/{input,output}_K.pb, the outputs being
PyTorch's on the same input: torchvision's resnet18 and mobilenet_v2 (random weights, eval), a
2-layer transformer encoder, and an LSTM language model (embedding, 2-layer LSTM, linear).
The files are large (resnet18: 45 MB), so the test run generates them into the build tree.
Needs /usr/bin/python3 with Debian's python3-torch, python3-torchvision and python3-onnx.
"""
import os
import sys

import torch
import torchvision
from onnx import numpy_helper


class LstmLM(torch.nn.Module):
    def __init__(self, vocab=100, dim=32, hidden=48):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.lstm = torch.nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


def write_case(out_dir, name, model, inputs, input_names, dynamic_axes=None, opset=13):
    case = os.path.join(out_dir, name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    model.eval()
    with torch.no_grad():
        expected = model(*inputs)
    torch.onnx.export(model, tuple(inputs), os.path.join(case, "model.onnx"), input_names=input_names,
                      output_names=["output"], dynamic_axes=dynamic_axes, opset_version=opset)
    for k, (n, x) in enumerate(zip(input_names, inputs)):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x.numpy(), n).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(expected.numpy(), "output").SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    torch.manual_seed(0)
    image = torch.randn(1, 3, 224, 224)
    write_case(out, "torch_resnet18", torchvision.models.resnet18(), [image], ["input"], {"input": {0: "batch"}})
    write_case(out, "torch_mobilenet_v2", torchvision.models.mobilenet_v2(), [image], ["input"], {"input": {0: "batch"}})
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2)
    write_case(out, "torch_transformer_encoder", encoder, [torch.randn(2, 10, 64)], ["x"],
               {"x": {0: "batch", 1: "seq"}}, opset=14)
    tokens = torch.randint(0, 100, (2, 12))
    write_case(out, "torch_lstm_lm", LstmLM(), [tokens], ["tokens"], {"tokens": {0: "batch", 1: "seq"}})
    print(f"4 PyTorch models in {out}")


if __name__ == "__main__":
    main()
