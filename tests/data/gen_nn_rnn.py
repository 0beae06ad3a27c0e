"""Reference data for the recurrent layers (tests/nn/test_rnn.cpp).

Each case builds a torch.nn.LSTM or GRU, records its state_dict (names, shapes, values), an
input and optional initial states, the output and final states, and the gradients of
    sum(seed_output * output) + sum(seed_h * h_n) [+ sum(seed_c * c_n)]
with respect to every parameter, the input and the initial states given. The kiln test loads
the weights by name and must reproduce all of it. A case with dropout between layers uses
p = 1 (every element dropped: deterministic) and also records the eval-mode output.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import json
import os

import torch
import torch.nn as nn

from refgen import tensor_json

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


def named(pairs):
    return [{"name": k, "tensor": tensor_json(v)} for k, v in pairs]


def rnn_case(name, kind, config, input_shape, initial=False):
    cls = {"LSTM": nn.LSTM, "GRU": nn.GRU}[kind]
    model = cls(config["input_size"], config["hidden_size"], num_layers=config.get("num_layers", 1),
                bias=config.get("bias", True), batch_first=config.get("batch_first", False),
                dropout=config.get("dropout", 0.0), bidirectional=config.get("bidirectional", False))
    model.train()
    x = torch.randn(input_shape, requires_grad=True)
    d = 2 if model.bidirectional else 1
    state_shape = [d * model.num_layers]
    if len(input_shape) == 3:  # batched: the states have a batch dim, even with batch_first
        state_shape.append(input_shape[0 if model.batch_first else 1])
    state_shape.append(model.hidden_size)
    leaves = [("input", x)]
    init = None
    if initial:
        h0 = torch.randn(state_shape, requires_grad=True)
        leaves.append(("h0", h0))
        if kind == "LSTM":
            c0 = torch.randn(state_shape, requires_grad=True)
            leaves.append(("c0", c0))
            init = (h0, c0)
        else:
            init = h0
    out, state = model(x, init)
    finals = [("h_n", state[0]), ("c_n", state[1])] if kind == "LSTM" else [("h_n", state)]
    seeds = [("output", torch.randn(out.shape))] + [(k, torch.randn(t.shape)) for k, t in finals]
    loss = (seeds[0][1] * out).sum()
    for (_, t), (_, s) in zip(finals, seeds[1:]):
        loss = loss + (s * t).sum()
    params = list(model.named_parameters())
    grads = torch.autograd.grad(loss, [p for _, p in params] + [t for _, t in leaves])
    case = {"name": name, "kind": kind, "config": config,
            "state": named(model.state_dict().items()),
            "parameter_count": sum(p.numel() for p in model.parameters()),
            "inputs": named(leaves),
            "outputs": named([("output", out)] + finals),
            "seeds": named(seeds),
            "grads": named(zip([k for k, _ in params], grads[:len(params)])),
            "input_grads": named(zip([k for k, _ in leaves], grads[len(params):]))}
    if model.dropout > 0:
        model.eval()
        with torch.no_grad():
            case["eval_output"] = tensor_json(model(x, init)[0])
    return case


cases = [
    rnn_case("lstm_stack", "LSTM", {"input_size": 5, "hidden_size": 4, "num_layers": 2, "bidirectional": True},
             [3, 2, 5], initial=True),
    rnn_case("lstm_batch_first", "LSTM", {"input_size": 3, "hidden_size": 4, "batch_first": True}, [2, 4, 3]),
    rnn_case("lstm_unbatched_no_bias", "LSTM", {"input_size": 3, "hidden_size": 2, "num_layers": 2, "bias": False},
             [4, 3], initial=True),
    rnn_case("lstm_dropout_all", "LSTM", {"input_size": 3, "hidden_size": 3, "num_layers": 2, "dropout": 1.0},
             [3, 2, 3]),
    rnn_case("gru_stack", "GRU",
             {"input_size": 5, "hidden_size": 4, "num_layers": 2, "bidirectional": True, "batch_first": True},
             [2, 3, 5], initial=True),
    rnn_case("gru_three_layers", "GRU", {"input_size": 4, "hidden_size": 3, "num_layers": 3}, [4, 2, 4]),
    rnn_case("gru_unbatched_bidirectional_no_bias", "GRU",
             {"input_size": 3, "hidden_size": 2, "bidirectional": True, "bias": False}, [4, 3], initial=True),
    rnn_case("lstm_tiny", "LSTM", {"input_size": 2, "hidden_size": 3}, [2, 1, 2], initial=True),
    rnn_case("gru_tiny", "GRU", {"input_size": 2, "hidden_size": 3}, [2, 1, 2], initial=True),
]
path = os.path.join(HERE, "nn_rnn.json")
with open(path, "w") as f:
    json.dump({"generator": "gen_nn_rnn.py", "torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print("wrote %d cases to %s" % (len(cases), path))
