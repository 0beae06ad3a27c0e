#!/usr/bin/python3
"""Small ONNX models exported by PyTorch, with PyTorch's outputs and gradients, for tests/onnx.

Writes tests/data/onnx/*.onnx (a few KB each) and tests/data/onnx_models.json:
  {"<model>": {"inputs": {name: tensor}, "outputs": [tensor, ...], "train_outputs": [...],
               "running": {name: tensor}, "grads": {initializer name: tensor}, "seq2": {...}}}
Tensors as in the other reference files: {"shape": [...], "dtype": "f32", "data": [...]}.
Also writes hand-made broken models (onnx.helper) for the loader's error tests.
Run with /usr/bin/python3 (Debian's python3-torch and python3-onnx).
"""
import json
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "onnx")


def tensor(t):
    a = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    dtype = {"float32": "f32", "int64": "i64", "bool": "bool"}[str(a.dtype)]
    return {"shape": list(a.shape), "dtype": dtype, "data": a.reshape(-1).tolist()}


def export(model, args, name, input_names, output_names, dynamic_axes=None, opset=13):
    path = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(model, args, path, input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes, opset_version=opset, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    return path


def grads_of(model, inputs):
    """Gradients of sum(output * weights) with fixed weights, by parameter name."""
    model.zero_grad()
    out = model(*inputs)
    g = torch.Generator().manual_seed(7)
    seed = torch.rand(out.shape, generator=g)
    (out * seed).sum().backward()
    return {n: tensor(p.grad) for n, p in model.named_parameters()}, tensor(seed)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


class Powers(torch.nn.Module):
    """Constant exponents that kiln lowers to square, sqrt, reciprocal (as PyTorch computes them),
    one it leaves to pow, and constant numbers on either side of Sub and Div."""

    def forward(self, x):
        a = x.abs() + 0.25
        return torch.stack([x ** 2, x ** 3, x ** -1, x ** -2, a ** 0.5, a ** -0.5, x ** 1, a ** 1.5,
                            (1.0 - x) / 2.0, 2.0 / a])


class Transposes(torch.nn.Module):
    """Permutations that move only dims of size 1 (kiln reshapes) beside ones that move data."""

    def forward(self, x):
        moves_ones = [x.permute(2, 0, 1, 3), x.permute(1, 0, 3, 2).permute(0, 1, 3, 2), x.permute(0, 2, 1, 3)]
        moves_data = [x.permute(3, 1, 0, 2), x.permute(0, 2, 3, 1)]
        return torch.cat([t.reshape(-1) for t in moves_ones + moves_data])


class AttentionScale(torch.nn.Module):
    """The attention scale as PyTorch 2's exporter writes scaled_dot_product_attention's:
    1 / sqrt(the last dim) from the input's shape, then q * sqrt(scale) (Shape, Slice, Cast, Sqrt,
    Div, Sqrt, Mul): arithmetic on a shape that kiln keeps on the host."""

    def forward(self, q):
        e = torch._shape_as_tensor(q)[-1:].to(torch.float)
        scale = 1.0 / torch.sqrt(e)
        return q * torch.sqrt(scale)


class LstmLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(20, 8)
        self.lstm = torch.nn.LSTM(8, 12, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(12, 20)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


def main():
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    refs = {}

    mlp = MLP().eval()
    x = torch.randn(4, 6)
    export(mlp, (x,), "mlp", ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    grads, seed = grads_of(mlp, (x,))
    x2 = torch.randn(2, 6)
    refs["mlp"] = {"inputs": {"x": tensor(x)}, "outputs": [tensor(mlp(x))], "grads": grads, "seed": seed,
                   "batch2": {"inputs": {"x": tensor(x2)}, "outputs": [tensor(mlp(x2))]}}

    cnn = CNN()
    with torch.no_grad():
        cnn.bn.running_mean.uniform_(-0.5, 0.5)
        cnn.bn.running_var.uniform_(0.5, 1.5)
        cnn.bn.weight.uniform_(0.5, 1.5)
        cnn.bn.bias.uniform_(-0.5, 0.5)
    cnn.eval()
    x = torch.randn(3, 2, 6, 6)
    export(cnn, (x,), "cnn_bn", ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    eval_out = cnn(x)
    grads, seed = grads_of(cnn, (x,))
    cnn.train()
    train_out = cnn(x)
    refs["cnn_bn"] = {"inputs": {"x": tensor(x)}, "outputs": [tensor(eval_out)], "grads": grads, "seed": seed,
                      "train_outputs": [tensor(train_out)],
                      "running": {"bn.running_mean": tensor(cnn.bn.running_mean),
                                  "bn.running_var": tensor(cnn.bn.running_var)}}

    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1,
                                             batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    export(layer, (x,), "encoder", ["x"], ["y"], {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, opset=14)
    x3 = torch.randn(1, 7, 16)
    with torch.no_grad():
        refs["encoder"] = {"inputs": {"x": tensor(x)}, "outputs": [tensor(layer(x))],
                           "seq7": {"inputs": {"x": tensor(x3)}, "outputs": [tensor(layer(x3))]}}

    # Without constant folding the LSTM's weights keep their PyTorch names, repacked into ONNX's
    # gate order inside the graph (Slice, Concat): gradients reach them through that.
    lm = LstmLM().eval()
    tokens = torch.randint(0, 20, (2, 5))
    path = export(lm, (tokens,), "lstm_lm", ["tokens"], ["logits"], {"tokens": {0: "batch", 1: "seq"}})
    names = {i.name for i in onnx.load(path).graph.initializer}
    grads, seed = grads_of(lm, (tokens,))
    refs["lstm_lm"] = {"inputs": {"tokens": tensor(tokens)}, "outputs": [tensor(lm(tokens))], "seed": seed,
                       "grads": {n: g for n, g in grads.items() if n in names}}
    assert len(refs["lstm_lm"]["grads"]) == len(grads), "an LSTM weight lost its name in the export"

    powers = Powers()
    x = torch.randn(3, 8)
    export(powers, (x,), "powers", ["x"], ["y"], opset=14)
    refs["powers"] = {"inputs": {"x": tensor(x)}, "outputs": [tensor(powers(x))]}

    transposes = Transposes()
    x = torch.randn(1, 3, 1, 4)
    export(transposes, (x,), "transposes", ["x"], ["y"], opset=14)
    refs["transposes"] = {"inputs": {"x": tensor(x)}, "outputs": [tensor(transposes(x))]}

    scale = AttentionScale()
    q = torch.randn(2, 3, 5, 8)
    export(scale, (q,), "attention_scale", ["q"], ["y"], {"q": {0: "batch", 3: "dim"}}, opset=14)
    q6 = torch.randn(1, 3, 5, 6)
    refs["attention_scale"] = {"inputs": {"q": tensor(q)}, "outputs": [tensor(scale(q))],
                               "dim6": {"inputs": {"q": tensor(q6)}, "outputs": [tensor(scale(q6))]}}

    write_shape_mod_model()
    q = torch.randn(2, 3, 5, 8)
    q6 = torch.randn(1, 3, 5, 6)
    refs["shape_mod"] = {"inputs": {"q": tensor(q)}, "outputs": [tensor(q.reshape(-1, q.shape[-1]))],
                         "dim6": {"inputs": {"q": tensor(q6)}, "outputs": [tensor(q6.reshape(-1, q6.shape[-1]))]}}

    with open(os.path.join(HERE, "onnx_models.json"), "w") as f:
        json.dump(refs, f)
    write_broken_models()


def write_shape_mod_model():
    """q.reshape(-1, q.shape[-1]) with the last dim's index as PyTorch 2.11's exporter writes it
    inside attention: Mod(-1, 4) of two constants (Python's modulo, 3), then Slice of the Shape
    from it to it + 1. Written by hand: PyTorch 1.13 folds the Mod away."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.int64)))
    nodes = [
        helper.make_node("Shape", ["q"], ["shape"]),
        c("minus_one", -1), c("rank", 4), c("one", 1), c("as_1d", [1]), c("flat", [-1]),
        helper.make_node("Mod", ["minus_one", "rank"], ["last"]),  # fmod 0: the divisor's sign, 3
        helper.make_node("Add", ["last", "one"], ["after"]),
        helper.make_node("Reshape", ["last", "as_1d"], ["starts"]),
        helper.make_node("Reshape", ["after", "as_1d"], ["ends"]),
        helper.make_node("Slice", ["shape", "starts", "ends"], ["dim"]),
        helper.make_node("Concat", ["flat", "dim"], ["target"], axis=0),
        helper.make_node("Reshape", ["q", "target"], ["y"]),
    ]
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, ["batch", 3, 5, "dim"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", "dim"])
    with open(os.path.join(OUT, "shape_mod.onnx"), "wb") as f:
        f.write(model_of(nodes, [q], [y], opset=14).SerializeToString())


def model_of(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def write_broken_models():
    broken = os.path.join(OUT, "broken")
    os.makedirs(broken, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")

    def save(model, name):
        with open(os.path.join(broken, name + ".onnx"), "wb") as f:
            f.write(model.SerializeToString())

    save(model_of([helper.make_node("Add", ["x", "missing_w"], ["y"], name="add0")], [x], [y]), "missing_initializer")
    save(model_of([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                   helper.make_node("Relu", ["a"], ["b"], name="second"),
                   helper.make_node("Identity", ["a"], ["y"], name="out")], [x], [y]), "cycle")
    save(model_of([helper.make_node("Det", ["x"], ["y"], name="det0")], [x], [y]), "unsupported_op")
    save(model_of([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [x], [y], opset=18), "opset_18")
    bad = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    bad.raw_data = bad.raw_data[:10]
    save(model_of([helper.make_node("Add", ["x", "w"], ["y"], name="add0")], [x], [y], [bad]), "short_raw_data")
    save(model_of([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul0")], [x], [y], [w]), "shape_mismatch")
    # External data: the weights in a file beside the model, and one pointing outside the folder.
    ext = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    raw = ext.raw_data
    ext.ClearField("raw_data")
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", str(len(raw)))):
        e = ext.external_data.add()
        e.key, e.value = k, v
    save(model_of([helper.make_node("Add", ["x", "w"], ["y"], name="add0")], [x], [y], [ext]), "external_data")
    with open(os.path.join(broken, "weights.bin"), "wb") as f:
        f.write(raw)
    ext.external_data[0].value = "../weights.bin"
    save(model_of([helper.make_node("Add", ["x", "w"], ["y"], name="add0")], [x], [y], [ext]), "external_escape")


if __name__ == "__main__":
    main()
