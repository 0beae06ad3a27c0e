"""Reference data for kiln::optim's learning-rate schedulers (tests/optim/test_lr_scheduler.cpp),
written to optim_schedulers.json.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_optim_schedulers.py
Each case steps a torch scheduler the way a training loop does: read the lr, optimizer.step(),
scheduler.step(), on one dummy parameter with torch.optim.SGD(lr=base_lr) (momentum=0.9 where
OneCycleLR cycles the momentum). Cases have no tensors; attrs hold:
  scheduler: kiln's name of the schedule ("kind") and its settings under the names of kiln's
             constructor arguments; LinearWarmup's "then" is the schedule after the warmup
  lrs:       param_groups[0]['lr'] after 0, 1, ..., n scheduler steps (n + 1 values)
  momenta:   param_groups[0]['momentum'] at the same points (OneCycleLr with cycle_momentum)
  metrics:   the n metrics given to the steps (ReduceLrOnPlateau, alone or after a warmup)
  raises_after: OneCycleLR raised ValueError on step n + 1 (checked here when generating)
kiln schedules that torch builds from other classes:
  ConstantLr        LambdaLR(lambda e: 1.0)
  ConstantFactorLr  ConstantLR(factor, total_iters)
  NoamLr            LambdaLR(lambda e: d_model**-0.5 * min((e+1)**-0.5, (e+1) * warmup**-1.5)):
                    the step counts from 1, so the peak is at the warmup_steps-th optimizer step
  LinearWarmup      SequentialLR([LinearLR(start_factor, 1.0, warmup_steps), then],
                    milestones=[warmup_steps]); before ReduceLROnPlateau, which SequentialLR cannot
                    hold: LinearLR for the first warmup_steps steps, then the plateau scheduler
                    stepped with the metrics from there on.
"""
import math
import warnings

import torch
from torch.optim import lr_scheduler as L

from refgen import case, write

# SequentialLR steps its second scheduler with an explicit epoch at the milestone, which torch
# warns about; the values are what is recorded.
warnings.filterwarnings("ignore", category=UserWarning)


def torch_scheduler(opt, spec):
    kind = spec["kind"]
    if kind == "ConstantLr":
        return L.LambdaLR(opt, lambda e: 1.0)
    if kind == "ConstantFactorLr":
        return L.ConstantLR(opt, factor=spec["factor"], total_iters=spec["total_iters"])
    if kind == "StepLr":
        return L.StepLR(opt, step_size=spec["step_size"], gamma=spec["gamma"])
    if kind == "MultiStepLr":
        return L.MultiStepLR(opt, milestones=spec["milestones"], gamma=spec["gamma"])
    if kind == "ExponentialLr":
        return L.ExponentialLR(opt, gamma=spec["gamma"])
    if kind == "LinearLr":
        return L.LinearLR(opt, start_factor=spec["start_factor"], end_factor=spec["end_factor"],
                          total_iters=spec["total_iters"])
    if kind == "CosineAnnealingLr":
        return L.CosineAnnealingLR(opt, T_max=spec["t_max"], eta_min=spec["eta_min"])
    if kind == "CosineAnnealingWarmRestarts":
        return L.CosineAnnealingWarmRestarts(opt, T_0=spec["t_0"], T_mult=spec["t_mult"], eta_min=spec["eta_min"])
    if kind == "OneCycleLr":
        return L.OneCycleLR(opt, max_lr=spec["max_lr"], total_steps=spec["total_steps"], pct_start=spec["pct_start"],
                            anneal_strategy=spec["anneal_strategy"], cycle_momentum=spec["cycle_momentum"],
                            base_momentum=spec["base_momentum"], max_momentum=spec["max_momentum"],
                            div_factor=spec["div_factor"], final_div_factor=spec["final_div_factor"],
                            three_phase=spec["three_phase"])
    if kind == "ReduceLrOnPlateau":
        return L.ReduceLROnPlateau(opt, mode=spec["mode"], factor=spec["factor"], patience=spec["patience"],
                                   threshold=spec["threshold"], threshold_mode=spec["threshold_mode"],
                                   cooldown=spec["cooldown"], min_lr=spec["min_lr"], eps=spec["eps"])
    if kind == "NoamLr":
        d, w = spec["d_model"], spec["warmup_steps"]
        return L.LambdaLR(opt, lambda e: d ** -0.5 * min((e + 1) ** -0.5, (e + 1) * w ** -1.5))
    if kind == "LinearWarmup":
        warmup = L.LinearLR(opt, start_factor=spec["start_factor"], end_factor=1.0, total_iters=spec["warmup_steps"])
        then = torch_scheduler(opt, spec["then"])
        if isinstance(then, L.ReduceLROnPlateau):
            return PlateauAfterWarmup(warmup, then, spec["warmup_steps"])
        return L.SequentialLR(opt, [warmup, then], milestones=[spec["warmup_steps"]])
    raise ValueError(kind)


class PlateauAfterWarmup:
    """LinearLR for the first warmup_steps steps (ending at the base lr), then ReduceLROnPlateau."""

    def __init__(self, warmup, plateau, warmup_steps):
        self.warmup, self.plateau, self.warmup_steps, self.steps = warmup, plateau, warmup_steps, 0

    def step(self, metric):
        if self.steps < self.warmup_steps:
            self.warmup.step()
        else:
            self.plateau.step(metric)
        self.steps += 1


def base_lr_of(spec):
    if spec["kind"] == "LinearWarmup":
        return base_lr_of(spec["then"])
    if spec["kind"] == "OneCycleLr":
        return spec["max_lr"]  # OneCycleLR replaces it with max_lr / div_factor
    return spec["base_lr"]


def needs_metric(spec):
    return spec["kind"] == "ReduceLrOnPlateau" or (spec["kind"] == "LinearWarmup" and needs_metric(spec["then"]))


def run(name, spec, steps, metrics=None):
    param = torch.nn.Parameter(torch.zeros(1))
    cycles_momentum = spec["kind"] == "OneCycleLr" and spec["cycle_momentum"]
    opt = torch.optim.SGD([param], lr=base_lr_of(spec), momentum=0.9 if cycles_momentum else 0.0)
    sched = torch_scheduler(opt, spec)
    attrs = dict(scheduler=spec, lrs=[], momenta=[])
    if needs_metric(spec):
        assert len(metrics) == steps
        attrs["metrics"] = metrics
    for k in range(steps + 1):
        attrs["lrs"].append(opt.param_groups[0]["lr"])
        if cycles_momentum:
            attrs["momenta"].append(opt.param_groups[0]["momentum"])
        if k == steps:
            break
        opt.step()
        if needs_metric(spec):
            sched.step(metrics[k])
        else:
            sched.step()
    if spec["kind"] == "OneCycleLr":
        try:
            sched.step()
            raise AssertionError("OneCycleLR took a step past total_steps")
        except ValueError:
            attrs["raises_after"] = True
    if not attrs["momenta"]:
        del attrs["momenta"]
    return case(name, spec["kind"], [], [], attrs)


cases = []


def add(name, spec, steps, metrics=None):
    cases.append(run(name, spec, steps, metrics))


def one_cycle(max_lr, total_steps, **kw):
    spec = dict(kind="OneCycleLr", max_lr=max_lr, total_steps=total_steps, pct_start=0.3, anneal_strategy="cos",
                cycle_momentum=True, base_momentum=0.85, max_momentum=0.95, div_factor=25.0,
                final_div_factor=1e4, three_phase=False)
    spec.update(kw)
    return spec


def plateau(base_lr, **kw):
    spec = dict(kind="ReduceLrOnPlateau", base_lr=base_lr, mode="min", factor=0.1, patience=10, threshold=1e-4,
                threshold_mode="rel", cooldown=0, min_lr=0.0, eps=1e-8)
    spec.update(kw)
    return spec


# A loss that falls, stalls with improvements too small for a 1% relative threshold, falls
# again, stalls for long, rises, and ends flat; and a noisy one.
STALLING_LOSS = ([1.0, 0.9, 0.8, 0.7, 0.6] + [0.6 * (1 - 0.001 * i) for i in range(1, 7)] +
                 [0.5, 0.45, 0.4] + [0.4] * 9 + [0.41, 0.43, 0.46, 0.5] + [0.39, 0.385, 0.3] + [0.3] * 20)
NOISY_LOSS = [1.0 / (1 + 0.1 * k) + 0.05 * math.sin(1.7 * k) for k in range(50)]
ACCURACY = [1.0 - m for m in STALLING_LOSS]
NOISY_ACCURACY = [1.0 - m for m in NOISY_LOSS]

add("constant", dict(kind="ConstantLr", base_lr=0.1), 10)

for i, (base, factor, total) in enumerate([(0.1, 0.5, 4), (0.1, 1.0 / 3, 5), (0.3, 0.1, 1), (0.1, 1.0, 3)]):
    add("constant_factor_%d" % i, dict(kind="ConstantFactorLr", base_lr=base, factor=factor, total_iters=total), 12)

for i, (base, size, gamma) in enumerate([(0.1, 3, 0.5), (0.05, 7, 0.1), (1.0, 1, 0.9), (0.01, 10, 1.5)]):
    add("step_%d" % i, dict(kind="StepLr", base_lr=base, step_size=size, gamma=gamma), 40)

for i, (base, milestones, gamma) in enumerate([(0.1, [5, 12, 20], 0.1), (0.5, [0, 3, 3, 9], 0.5), (0.02, [25], 0.2)]):
    add("multistep_%d" % i, dict(kind="MultiStepLr", base_lr=base, milestones=milestones, gamma=gamma), 30)

for i, (base, gamma) in enumerate([(0.1, 0.9), (1.0, 0.5), (0.003, 1.02)]):
    add("exponential_%d" % i, dict(kind="ExponentialLr", base_lr=base, gamma=gamma), 40)

for i, (base, start, end, total) in enumerate([(0.1, 1.0 / 3, 1.0, 5), (0.05, 0.25, 1.0, 8), (0.1, 1.0, 0.1, 10),
                                               (0.2, 0.5, 0.75, 3), (0.1, 1.0, 0.0, 6), (0.1, 0.2, 1.0, 1)]):
    add("linear_%d" % i, dict(kind="LinearLr", base_lr=base, start_factor=start, end_factor=end, total_iters=total), 20)

# 60 steps: past t_max the cosine rises again; eta_min above base_lr inverts it.
for i, (base, t_max, eta_min) in enumerate([(0.1, 10, 0.0), (0.1, 7, 0.001), (0.05, 13, 0.01), (0.1, 1, 0.0),
                                            (1.0, 25, 0.0), (0.1, 4, 0.2)]):
    add("cosine_%d" % i, dict(kind="CosineAnnealingLr", base_lr=base, t_max=t_max, eta_min=eta_min), 60)

for i, (base, t_0, t_mult, eta_min) in enumerate([(0.1, 5, 1, 0.0), (0.1, 3, 2, 0.001), (0.05, 4, 3, 0.01),
                                                  (0.1, 1, 1, 0.0), (0.2, 2, 1, 0.05)]):
    add("warm_restarts_%d" % i,
        dict(kind="CosineAnnealingWarmRestarts", base_lr=base, t_0=t_0, t_mult=t_mult, eta_min=eta_min), 60)

# OneCycle is stepped total_steps times, all torch allows.
for i, spec in enumerate([one_cycle(0.1, 40), one_cycle(0.5, 50, pct_start=0.25, anneal_strategy="linear"),
                          one_cycle(1.0, 30, three_phase=True),
                          one_cycle(0.2, 45, three_phase=True, anneal_strategy="linear", div_factor=10.0,
                                    final_div_factor=100.0),
                          one_cycle(0.1, 40, cycle_momentum=False), one_cycle(0.3, 37, pct_start=0.0),
                          one_cycle(0.1, 33, pct_start=0.45, base_momentum=0.8, max_momentum=0.9),
                          one_cycle(0.1, 1)]):
    add("one_cycle_%d" % i, spec, spec["total_steps"])

# Patience, cooldown, both threshold modes, both directions, the min_lr floor and eps.
add("plateau_min_rel", plateau(0.1, factor=0.5, patience=2, threshold=1e-2), 50, STALLING_LOSS)
add("plateau_min_abs_cooldown_floor",
    plateau(0.1, factor=0.3, patience=1, threshold=0.05, threshold_mode="abs", cooldown=2, min_lr=0.004), 50,
    STALLING_LOSS)
add("plateau_max_rel", plateau(1.0, mode="max", patience=0, threshold=0.01, cooldown=1), 50, ACCURACY)
add("plateau_max_abs_floor",
    plateau(0.05, mode="max", factor=0.5, patience=3, threshold=0.0, threshold_mode="abs", min_lr=0.02, eps=1e-3),
    50, ACCURACY)
# A reduction of 0.05 * 0.01 is below eps = 1e-3 and skipped; with the default eps it happens.
add("plateau_eps_skips", plateau(0.05, factor=0.99, patience=2, eps=1e-3), 50, STALLING_LOSS)
add("plateau_eps_default", plateau(0.05, factor=0.99, patience=2), 50, STALLING_LOSS)
add("plateau_defaults", plateau(0.1), 50, STALLING_LOSS)
add("plateau_noisy_max", plateau(0.1, mode="max", factor=0.2, patience=1, threshold=0.02), 50, NOISY_ACCURACY)
add("plateau_noisy_cooldown", plateau(0.2, factor=0.5, patience=1, cooldown=3), 50, NOISY_LOSS)

for i, (base, d_model, warmup) in enumerate([(1.0, 512, 10), (2.0, 64, 4), (0.5, 128, 1)]):
    add("noam_%d" % i, dict(kind="NoamLr", base_lr=base, d_model=d_model, warmup_steps=warmup), 40)


def warmup(steps, start, then):
    return dict(kind="LinearWarmup", warmup_steps=steps, start_factor=start, then=then)


for i, spec in enumerate([
        warmup(5, 0.1, dict(kind="StepLr", base_lr=0.1, step_size=3, gamma=0.5)),
        warmup(10, 0.01, dict(kind="CosineAnnealingLr", base_lr=0.1, t_max=20, eta_min=0.001)),
        warmup(3, 1.0 / 3, dict(kind="ExponentialLr", base_lr=0.05, gamma=0.9)),
        warmup(4, 0.25, dict(kind="CosineAnnealingWarmRestarts", base_lr=0.1, t_0=5, t_mult=2, eta_min=0.0)),
        warmup(6, 0.5, dict(kind="ConstantFactorLr", base_lr=0.1, factor=0.5, total_iters=4)),
        warmup(5, 0.2, dict(kind="NoamLr", base_lr=1.0, d_model=64, warmup_steps=8)),
        warmup(1, 0.5, dict(kind="LinearLr", base_lr=0.1, start_factor=1.0, end_factor=0.1, total_iters=10)),
        warmup(7, 0.1, dict(kind="MultiStepLr", base_lr=0.2, milestones=[3, 10], gamma=0.1))]):
    add("warmup_%d" % i, spec, 40)
add("warmup_plateau", warmup(6, 0.1, plateau(0.1, factor=0.5, patience=2, threshold=1e-2, cooldown=1)), 50,
    STALLING_LOSS)

write("optim_schedulers", cases)
