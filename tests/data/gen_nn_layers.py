"""Reference data for the layer tests (tests/nn/test_layers.cpp): each torch.nn layer with its
state_dict (names, shapes, values), an input, its output in training mode, the gradients of
sum(seed * output) for every parameter and the input, and its output in eval mode. The kiln
test builds the same layer (by case name), loads the weights by name and must reproduce all.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import json
import os

import torch
import torch.nn as nn

from refgen import tensor_json

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


def layer_case(name, layer, *shapes, integer_input=None):
    for n, b in layer.named_buffers():  # running statistics away from 0 and 1
        if n.endswith("running_mean"):
            b.copy_(torch.randn(b.shape) * 0.1)
        elif n.endswith("running_var"):
            b.copy_(torch.rand(b.shape) + 0.5)
    state = [{"name": k, "tensor": tensor_json(v)} for k, v in layer.state_dict().items()]
    if integer_input is not None:
        inputs = [integer_input]
    else:
        inputs = [torch.randn(s).requires_grad_() for s in shapes]
    layer.train()
    out = layer(*inputs)
    seed = torch.randn(out.shape)
    params = list(layer.named_parameters())
    wrt = [p for _, p in params] + [x for x in inputs if x.is_floating_point()]
    grads = torch.autograd.grad(out, wrt, seed, allow_unused=True)
    grads = [torch.zeros_like(w) if g is None else g for w, g in zip(wrt, grads)]
    layer.eval()
    with torch.no_grad():
        eval_out = layer(*inputs)
    return {"name": name, "state": state, "inputs": [tensor_json(x.detach()) for x in inputs],
            "train_output": tensor_json(out), "seed": tensor_json(seed),
            "grads": [{"name": k, "tensor": tensor_json(g)} for (k, _), g in zip(params, grads)],
            "input_grads": [tensor_json(g) for g in grads[len(params):]],
            "eval_output": tensor_json(eval_out),
            "parameter_count": sum(p.numel() for p in layer.parameters())}


cases = [
    layer_case("bilinear", nn.Bilinear(3, 4, 5), (2, 3), (2, 4)),
    layer_case("embedding_padding", nn.Embedding(6, 3, padding_idx=2),
               integer_input=torch.tensor([[0, 2, 5], [2, 1, 1]])),
    layer_case("conv1d_stride_groups", nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 9)),
    layer_case("conv3d", nn.Conv3d(2, 3, (2, 3, 2), padding=(1, 0, 1)), (1, 2, 4, 5, 3)),
    layer_case("conv2d_same_dilated", nn.Conv2d(3, 4, 3, padding="same", dilation=2), (2, 3, 7, 6)),
    layer_case("conv2d_depthwise", nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False), (2, 4, 5, 5)),
    layer_case("conv_transpose1d", nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5)),
    layer_case("conv_transpose2d_groups", nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), groups=2), (2, 4, 3, 4)),
    layer_case("batchnorm1d", nn.BatchNorm1d(3), (4, 3, 5)),
    layer_case("batchnorm1d_flat_no_affine", nn.BatchNorm1d(3, affine=False, momentum=0.3), (5, 3)),
    layer_case("layernorm", nn.LayerNorm([3, 4]), (2, 3, 4)),
    layer_case("groupnorm", nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    layer_case("instancenorm2d_affine", nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    layer_case("instancenorm1d", nn.InstanceNorm1d(3), (2, 3, 6)),
    layer_case("prelu_channels", nn.PReLU(3, init=0.2), (2, 3, 4)),
    layer_case("leaky_relu", nn.LeakyReLU(0.2), (3, 4)),
    layer_case("elu", nn.ELU(0.7), (3, 4)),
    layer_case("gelu_tanh", nn.GELU(approximate="tanh"), (3, 4)),
    layer_case("silu", nn.SiLU(), (3, 4)),
    layer_case("mish", nn.Mish(), (3, 4)),
    layer_case("softmax", nn.Softmax(dim=1), (3, 4)),
    layer_case("log_softmax", nn.LogSoftmax(dim=-1), (3, 4)),
    layer_case("max_pool1d", nn.MaxPool1d(3, stride=2, padding=1), (2, 3, 8)),
    layer_case("max_pool2d_ceil", nn.MaxPool2d(2, ceil_mode=True), (2, 3, 5, 5)),
    layer_case("avg_pool2d", nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 3, 6, 5)),
    layer_case("avg_pool1d", nn.AvgPool1d(2), (2, 3, 7)),
    layer_case("adaptive_avg_pool2d", nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 5, 7)),
    layer_case("adaptive_avg_pool1d", nn.AdaptiveAvgPool1d(3), (2, 3, 7)),
    layer_case("adaptive_max_pool2d", nn.AdaptiveMaxPool2d((3, 2)), (2, 3, 7, 5)),
    layer_case("upsample_bilinear", nn.Upsample(size=(5, 7), mode="bilinear", align_corners=True), (1, 2, 3, 4)),
    layer_case("upsample_nearest", nn.Upsample(size=(6, 4), mode="nearest"), (1, 2, 3, 4)),
    layer_case("flatten", nn.Flatten(), (2, 3, 2, 2)),
    layer_case("dropout_eval_train", nn.Dropout(0.0), (3, 4)),
]
path = os.path.join(HERE, "nn_layers.json")
with open(path, "w") as f:
    json.dump({"generator": "gen_nn_layers.py", "torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print("wrote %d cases to %s" % (len(cases), path))
