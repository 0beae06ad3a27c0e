"""Reference data for kiln::nn's losses (tests/nn/test_loss.cpp), written to nn_loss.json.

Run with Debian's python3-torch:  /usr/bin/python3 tests/data/gen_nn_loss.py
Case layout: nngen.py. Every case has attrs["reduction"] ("none", "mean", "sum", "batchmean");
the others the C++ side reads to call the kiln function:
  cross_entropy, nll_loss:  weight (bool: the last tensor input is the class weight),
                            ignore_index, label_smoothing (cross_entropy)
  huber_loss: delta; smooth_l1_loss: beta; kl_div: log_target
  binary_cross_entropy:     weight (bool);  ..._with_logits: weight, pos_weight (bools)
  cosine_embedding_loss, margin_ranking_loss: margin
Inputs come in the order of the kiln signature, absent optional tensors skipped.
Gradients are torch's for every floating input (class-probability targets included), except
where no_grad marks an input whose gradient follows a convention kiln does not copy (see the
comments at those cases).
"""
import torch
import torch.nn.functional as F

from nngen import nn_case
from refgen import write

torch.manual_seed(1)
cases = []
REDUCTIONS = ("none", "mean", "sum")


def rn(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def add(name, op, fn, inputs, fd=False, no_grad=(), **attrs):
    cases.append(nn_case(name, op, fn, inputs, attrs, no_grad=no_grad, fd=fd))


# cross_entropy with class-index targets: logits [4, 5], targets [4]
logits, target, weight = rn(4, 5, scale=2.0), torch.tensor([1, 0, 4, 2]), torch.rand(5) + 0.2
ignored = torch.tensor([1, -100, 4, -100])


def ce(weighted=False, **kw):
    if weighted:
        return lambda x, t, w: F.cross_entropy(x, t, weight=w, **kw)
    return lambda x, t: F.cross_entropy(x, t, **kw)


def ce_case(name, x, t, w=None, ignore_index=-100, smoothing=0.0, reductions=REDUCTIONS, fd=False):
    # torch's nll_loss declares its class weight non-differentiable: with class-index targets
    # the weight's gradient is not compared (with probability targets it is).
    no_grad = (2,) if not t.is_floating_point() else ()
    for r in reductions:
        kw = dict(ignore_index=ignore_index, label_smoothing=smoothing, reduction=r)
        add("%s_%s" % (name, r), "cross_entropy", ce(w is not None, **kw), [x, t] + ([w] if w is not None else []),
            fd=fd and r == "mean", no_grad=no_grad, weight=w is not None, ignore_index=ignore_index, label_smoothing=smoothing,
            reduction=r)


ce_case("ce_index", logits, target, fd=True)
ce_case("ce_index_weight", logits, target, weight)
ce_case("ce_index_ignore", logits, ignored, weight)
ce_case("ce_index_ignore_custom", logits, target, ignore_index=4)
# Every target ignored: the mean is 0 / 0 = NaN in torch, the sum 0.
ce_case("ce_index_all_ignored", logits, torch.full((4,), -100), weight)
ce_case("ce_index_all_ignored_unweighted", logits, torch.full((4,), -100), reductions=("mean",))
ce_case("ce_index_smooth", logits, target, smoothing=0.1)
ce_case("ce_index_smooth_weight", logits, target, weight, smoothing=0.2, fd=True)
ce_case("ce_index_smooth_weight_ignore", logits, ignored, weight, smoothing=0.3)
ce_case("ce_index_spatial", rn(2, 3, 2, 2), torch.tensor([[[0, 2], [1, -100]], [[2, 2], [0, 1]]]), torch.rand(3) + 0.5,
        smoothing=0.1)
ce_case("ce_index_unbatched", rn(5), torch.tensor(3), reductions=("none", "mean"))

# cross_entropy with class-probability targets (the mean divides by the number of samples)
probs = torch.softmax(rn(4, 5), 1)
ce_case("ce_prob", logits, probs, fd=True)
ce_case("ce_prob_weight", logits, probs, weight)
ce_case("ce_prob_smooth_weight", logits, probs, weight, smoothing=0.25)
ce_case("ce_prob_spatial", rn(2, 3, 4), torch.softmax(rn(2, 3, 4), 1), reductions=("mean",))

# nll_loss on log-probabilities
logp = torch.log_softmax(rn(4, 5), 1)
for r in REDUCTIONS:
    add("nll_%s" % r, "nll_loss", lambda x, t, r=r: F.nll_loss(x, t, reduction=r), [logp, target], weight=False,
        ignore_index=-100, reduction=r)
    add("nll_weight_ignore_%s" % r, "nll_loss", lambda x, t, w, r=r: F.nll_loss(x, t, w, ignore_index=0, reduction=r),
        [logp, target, weight], no_grad=(2,), weight=True, ignore_index=0, reduction=r)
add("nll_all_ignored_mean", "nll_loss", lambda x, t: F.nll_loss(x, t), [logp, torch.full((4,), -100)], weight=False,
    ignore_index=-100, reduction="mean")
add("nll_spatial_mean", "nll_loss", lambda x, t: F.nll_loss(x, t), [torch.log_softmax(rn(2, 3, 4), 1),
    torch.tensor([[0, 1, 2, 1], [2, 0, 0, 1]])], weight=False, ignore_index=-100, reduction="mean")

# Regression losses on [3, 4], differences spread over both sides of delta / beta.
a, b = rn(3, 4, scale=1.5), rn(3, 4, scale=1.5)
for r in REDUCTIONS:
    add("mse_%s" % r, "mse_loss", lambda x, y, r=r: F.mse_loss(x, y, reduction=r), [a, b], fd=r == "mean", reduction=r)
    add("l1_%s" % r, "l1_loss", lambda x, y, r=r: F.l1_loss(x, y, reduction=r), [a, b], fd=r == "mean", reduction=r)
    for delta in (1.0, 0.5):
        add("huber_%g_%s" % (delta, r), "huber_loss", lambda x, y, r=r, d=delta: F.huber_loss(x, y, reduction=r, delta=d),
            [a, b], fd=r == "sum", reduction=r, delta=delta)
    for beta in (1.0, 0.5, 0.0):
        add("smooth_l1_%g_%s" % (beta, r), "smooth_l1_loss",
            lambda x, y, r=r, be=beta: F.smooth_l1_loss(x, y, reduction=r, beta=be), [a, b], fd=r == "sum" and beta > 0,
            reduction=r, beta=beta)

# binary_cross_entropy on probabilities in (0, 1); weight [4] broadcast over [3, 4] (torch
# declares the weight non-differentiable: its gradient is not compared)
p, t, w = torch.rand(3, 4) * 0.9 + 0.05, torch.rand(3, 4), torch.rand(4) + 0.5
for r in REDUCTIONS:
    add("bce_%s" % r, "binary_cross_entropy", lambda x, y, r=r: F.binary_cross_entropy(x, y, reduction=r), [p, t],
        fd=r == "mean", weight=False, reduction=r)
    add("bce_weight_%s" % r, "binary_cross_entropy",
        lambda x, y, ww, r=r: F.binary_cross_entropy(x, y, ww, reduction=r), [p, t, w], no_grad=(2,), weight=True,
        reduction=r)
# Probabilities of exactly 0 and 1: each log is clamped at -100, so the loss stays finite. The
# gradient there is a convention (torch divides by max(p (1 - p), 1e-12); kiln's clamp passes
# none): forward only.
edge = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5])
add("bce_saturated", "binary_cross_entropy", lambda x, y: F.binary_cross_entropy(x, y, reduction="none"),
    [edge, torch.tensor([1.0, 0.0, 0.0, 1.0, 0.3])], no_grad=(0, 1), weight=False, reduction="none")
# binary_cross_entropy_with_logits, logits up to +-60 (exp would overflow in a naive form);
# torch declares weight and pos_weight non-differentiable
x = torch.cat([rn(2, 4, scale=3.0), torch.tensor([[60.0, -60.0, 25.0, -25.0]])])
pos = torch.tensor([0.5, 1.0, 2.0, 3.0])
for r in REDUCTIONS:
    add("bcel_%s" % r, "binary_cross_entropy_with_logits",
        lambda z, y, r=r: F.binary_cross_entropy_with_logits(z, y, reduction=r), [x, t], fd=r == "mean",
        weight=False, pos_weight=False, reduction=r)
    add("bcel_weights_%s" % r, "binary_cross_entropy_with_logits",
        lambda z, y, ww, pw, r=r: F.binary_cross_entropy_with_logits(z, y, ww, reduction=r, pos_weight=pw),
        [x, t, w, pos], no_grad=(2, 3), weight=True, pos_weight=True, reduction=r)
add("bcel_pos_weight_mean", "binary_cross_entropy_with_logits",
    lambda z, y, pw: F.binary_cross_entropy_with_logits(z, y, pos_weight=pw), [rn(3, 4), t, pos], fd=True,
    no_grad=(2,), weight=False, pos_weight=True, reduction="mean")

# kl_div: input log-probabilities; target probabilities (some exactly 0) or log-probabilities
inp = torch.log_softmax(rn(3, 4), 1)
tgt = torch.softmax(rn(3, 4), 1)
tgt_zero = tgt.clone()
tgt_zero[0, 1] = 0.0
tgt_zero[2, 3] = 0.0
for r in REDUCTIONS + ("batchmean",):
    add("kl_%s" % r, "kl_div", lambda x, y, r=r: F.kl_div(x, y, reduction=r), [inp, tgt], fd=r == "batchmean",
        reduction=r, log_target=False)
    add("kl_log_target_%s" % r, "kl_div", lambda x, y, r=r: F.kl_div(x, y, reduction=r, log_target=True),
        [inp, torch.log(tgt)], reduction=r, log_target=True)
# Zero targets add 0 (xlogy); the target's own gradient at 0 is -inf / NaN in torch: not compared.
add("kl_zero_target_sum", "kl_div", lambda x, y: F.kl_div(x, y, reduction="sum"), [inp, tgt_zero], no_grad=(1,),
    reduction="sum", log_target=False)

# cosine_embedding_loss: x1, x2 [5, 3], y of 1 / -1; cosines on both sides of the margin
x1, x2 = rn(5, 3), rn(5, 3)
x2[1] = x1[1] * 2.0 + 0.1 * rn(3)  # a similar pair, cos near 1
y = torch.tensor([1.0, -1.0, -1.0, 1.0, -1.0])
for r in REDUCTIONS:
    for margin in (0.0, 0.3):
        add("cosine_%g_%s" % (margin, r), "cosine_embedding_loss",
            lambda u, v, l, r=r, m=margin: F.cosine_embedding_loss(u, v, l, margin=m, reduction=r), [x1, x2, y],
            fd=r == "mean" and margin == 0.0, no_grad=(2,), margin=margin, reduction=r)
add("cosine_unbatched", "cosine_embedding_loss", lambda u, v, l: F.cosine_embedding_loss(u, v, l, reduction="none"),
    [rn(4), rn(4), torch.tensor(1.0)], no_grad=(2,), margin=0.0, reduction="none")

# margin_ranking_loss: x1, x2, y [6]
m1, m2 = rn(6), rn(6)
ym = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
for r in REDUCTIONS:
    add("ranking_%s" % r, "margin_ranking_loss",
        lambda u, v, l, r=r: F.margin_ranking_loss(u, v, l, margin=0.5, reduction=r), [m1, m2, ym], no_grad=(2,),
        margin=0.5, reduction=r)
add("ranking_no_margin_sum", "margin_ranking_loss", lambda u, v, l: F.margin_ranking_loss(u, v, l, reduction="sum"),
    [m1, m2, ym], no_grad=(2,), fd=True, margin=0.0, reduction="sum")

write("nn_loss", cases)
