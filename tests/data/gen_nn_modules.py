"""Reference data for the module tests (tests/nn/test_modules.cpp).

Each model here has a kiln twin written in the test with the same fields. For each, torch's
state_dict (names, shapes, values), an input, the outputs in training and eval mode, the
gradient of sum(seed * output) for every parameter, and the buffers after the training-mode
forward. The kiln test loads the weights by name and must reproduce all of it.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from refgen import tensor_json

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 8)
        self.fc3 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 2 * 2, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class ResidualBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


def sequential():
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))


def randomize_buffers(model):
    """Running statistics away from their 0/1 start, so eval mode really uses them."""
    for name, b in model.named_buffers():
        if name.endswith("running_mean"):
            b.copy_(torch.randn(b.shape) * 0.1)
        elif name.endswith("running_var"):
            b.copy_(torch.rand(b.shape) + 0.5)


def model_case(name, model, x):
    randomize_buffers(model)
    state = [{"name": k, "tensor": tensor_json(v)} for k, v in model.state_dict().items()]
    model.train()
    out = model(x)
    seed = torch.randn(out.shape)
    params = [(k, p) for k, p in model.named_parameters()]
    grads = torch.autograd.grad(out, [p for _, p in params], seed)
    after = [{"name": k, "tensor": tensor_json(v)} for k, v in model.named_buffers()]
    model.eval()
    with torch.no_grad():
        eval_out = model(x)
    return {"name": name, "state": state, "input": tensor_json(x), "train_output": tensor_json(out),
            "seed": tensor_json(seed), "grads": [{"name": k, "tensor": tensor_json(g)} for (k, _), g in zip(params, grads)],
            "buffers_after_train": after, "eval_output": tensor_json(eval_out),
            "parameter_count": sum(p.numel() for p in model.parameters())}


cases = [
    model_case("mlp", MLP(), torch.randn(4, 6)),
    model_case("small_cnn", SmallCNN(), torch.randn(2, 1, 8, 8)),
    model_case("residual_block", ResidualBlock(4), torch.randn(2, 4, 6, 6)),
    model_case("sequential", sequential(), torch.randn(3, 5)),
]
path = os.path.join(HERE, "nn_modules.json")
with open(path, "w") as f:
    json.dump({"generator": "gen_nn_modules.py", "torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print("wrote %d cases to %s" % (len(cases), path))
