"""Reference trajectories of kiln's optimizers (tests/optim/test_optimizers.cpp), written to optim.json.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_optim.py

Model: torch.nn.Sequential(Linear(4, 3), Tanh(), Linear(3, 2)), whose state_dict names
(0.weight, 0.bias, 2.weight, 2.bias) are those of kiln's nn::Sequential twin.

Case "setup": inputs = the initial parameters (4 tensors, state_dict order), then the
gradients of STEPS steps (4 per step, same order). Every trajectory case starts from these
parameters and takes these gradients (a fixed sequence, so that the optimizer's arithmetic
alone is compared, step after step).

Trajectory cases (op "trajectory"): attrs
  optimizer, options      the torch optimizer and its keyword arguments (Lion: written out
                          below after its paper, as PyTorch 1.13 has none)
  lrs                     the learning rate of each step (param_groups' lr set before it)
  groups                  [{"lr_scale", "weight_decay"}] for the biases' own param group
                          (absent: one group)
  skip                    [[step, param index]]: that parameter has no gradient that step
  clip                    {"norm": max_norm, "type": p} or {"value": v}, applied before each step
  record                  the steps (1-based) after which the parameters are recorded
outputs: for each recorded step the 4 parameters; then the final per-parameter state tensors
         in attrs["state_names"] order (name "slot.param"); then, with clip norm, the norms.

Case "mlp_adam" (op "train"): a 6-8-3 MLP with ReLU trained by Adam(lr 1e-2) on one fixed
batch with cross entropy for 20 steps. inputs: x, target (i64), then the initial state_dict;
outputs: the loss before each step (kiln computes the gradients itself here).
"""
import torch

from refgen import case, write

torch.manual_seed(30)
STEPS = 20
RECORD = [1, 2, 3, 5, 10, 20]
NAMES = ["0.weight", "0.bias", "2.weight", "2.bias"]


def make_model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))


init = [p.detach().clone() for p in make_model().parameters()]
grads = [[torch.randn(p.shape) * 0.5 for p in init] for _ in range(STEPS)]


class Lion(torch.optim.Optimizer):
    """Lion, Algorithm 2 of Chen et al. 2023 (decoupled weight decay)."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                update = (m * b1 + p.grad * (1 - b1)).sign_()
                p.add_(update, alpha=-group["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
              "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad,
              "adadelta": torch.optim.Adadelta, "lion": Lion}
# kiln's option names where torch's differ (betas is a tuple there).
RENAME = {"betas": ("beta1", "beta2")}


def trajectory(name, optimizer, options, lrs=None, groups=None, skip=(), clip=None):
    params = [p.clone().requires_grad_(True) for p in init]
    base_lr = options.get("lr", 1.0)
    if groups:
        g = groups[0]
        param_groups = [{"params": [params[0], params[2]]},
                        {"params": [params[1], params[3]], "lr": base_lr * g["lr_scale"],
                         "weight_decay": g["weight_decay"]}]
    else:
        param_groups = [{"params": params}]
    opt = OPTIMIZERS[optimizer](param_groups, **options)
    lrs = lrs or [base_lr] * STEPS
    outputs, norms = [], []
    for step in range(STEPS):
        for i, p in enumerate(params):
            p.grad = None if [step + 1, i] in [list(s) for s in skip] else grads[step][i].clone()
        for k, group in enumerate(opt.param_groups):
            group["lr"] = lrs[step] * (groups[0]["lr_scale"] if groups and k == 1 else 1.0)
        if clip and "norm" in clip:
            live = [p for p in params if p.grad is not None]
            norm_type = float(clip["type"])  # "inf" in the JSON (JSON has no infinity)
            norms.append(torch.nn.utils.clip_grad_norm_(live, clip["norm"], norm_type).reshape([]))
        elif clip:
            torch.nn.utils.clip_grad_value_([p for p in params if p.grad is not None], clip["value"])
        opt.step()
        if step + 1 in RECORD:
            outputs += [p.detach().clone() for p in params]
    state_names = []
    for i, p in enumerate(params):
        for slot, value in opt.state[p].items():
            if torch.is_tensor(value) and value.shape == p.shape:
                state_names.append("%s.%s" % (slot, NAMES[i]))
                outputs.append(value.clone())
    outputs += norms
    kiln_options = {}
    for k, v in options.items():
        if k in RENAME:
            for kk, vv in zip(RENAME[k], v):
                kiln_options[kk] = vv
        else:
            kiln_options[k] = v
    attrs = dict(optimizer=optimizer, options=kiln_options, lrs=lrs, record=RECORD, skip=[list(s) for s in skip],
                 state_names=state_names)
    if groups:
        attrs["groups"] = groups
    if clip:
        attrs["clip"] = clip
    return case(name, "trajectory", [], outputs, attrs)


cases = [case("setup", "setup", init + [g for step in grads for g in step], [])]
decaying = [0.05 * 0.9 ** s for s in range(STEPS)]
cases += [
    trajectory("sgd", "sgd", dict(lr=0.1)),
    trajectory("sgd_momentum_dampening_decay", "sgd", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    trajectory("sgd_nesterov", "sgd", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    trajectory("adam", "adam", dict(lr=1e-2)),
    trajectory("adam_decay_amsgrad", "adam", dict(lr=1e-2, betas=(0.8, 0.95), weight_decay=0.1, amsgrad=True)),
    trajectory("adamw", "adamw", dict(lr=1e-2)),
    trajectory("adamw_amsgrad", "adamw", dict(lr=1e-2, weight_decay=0.1, amsgrad=True, eps=1e-6)),
    trajectory("rmsprop", "rmsprop", dict(lr=1e-2)),
    trajectory("rmsprop_centered_momentum", "rmsprop",
               dict(lr=1e-2, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.01)),
    trajectory("adagrad", "adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.01)),
    trajectory("adadelta", "adadelta", dict()),
    trajectory("adadelta_options", "adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.01)),
    trajectory("lion", "lion", dict(lr=1e-3, weight_decay=0.1)),
    trajectory("adamw_groups_no_decay_on_biases", "adamw", dict(lr=1e-2, weight_decay=0.1),
               groups=[dict(lr_scale=0.5, weight_decay=0.0)]),
    trajectory("adam_decaying_lr", "adam", dict(lr=0.05), lrs=decaying),
    trajectory("adam_missing_gradients", "adam", dict(lr=1e-2), skip=[(3, 1), (4, 1), (7, 3)]),
    trajectory("sgd_momentum_missing_first", "sgd", dict(lr=0.1, momentum=0.9), skip=[(1, 2), (2, 2)]),
    trajectory("sgd_clip_norm", "sgd", dict(lr=0.1, momentum=0.9), clip=dict(norm=0.5, type=2.0)),
    trajectory("adam_clip_norm_inf", "adam", dict(lr=1e-2), clip=dict(norm=0.3, type="inf")),
    trajectory("sgd_clip_norm_l1", "sgd", dict(lr=0.1), clip=dict(norm=2.0, type=1.0)),
    trajectory("sgd_clip_value", "sgd", dict(lr=0.1), clip=dict(value=0.2)),
]

# End to end: kiln's own forward and backward, then Adam.
torch.manual_seed(11)
mlp = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
state = [v.detach().clone() for v in mlp.state_dict().values()]
x = torch.randn(16, 6)
target = torch.randint(0, 3, (16,))
opt = torch.optim.Adam(mlp.parameters(), lr=1e-2)
losses = []
for _ in range(20):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(mlp(x), target)
    losses.append(loss.detach().reshape([]))
    loss.backward()
    opt.step()
cases.append(case("mlp_adam", "train", [x, target] + state, losses, dict(steps=20, lr=1e-2)))

write("optim", cases)
