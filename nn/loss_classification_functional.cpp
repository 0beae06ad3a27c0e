// cross_entropy and nll_loss: log_softmax, then the log-probability of each sample's class
// (gather) or the target-weighted sum over classes (probability targets). Ignored targets are
// masked with `where`, never by multiplying with 0, so a -inf log-probability there cannot
// turn the loss or its gradient into NaN.
#include <string>

#include "kiln/nn/functional_detail.h"
#include "kiln/nn/loss.h"

namespace kiln::nn {
namespace {

struct ClassOptions {
  const Tensor& weight;
  std::int64_t ignore_index;
  double label_smoothing;
  Reduction reduction;
};

void check_class_inputs(const char* op, const Tensor& input, const Tensor& target, const ClassOptions& o) {
  detail::check_float(op, "input", input);
  detail::check_reduction(op, o.reduction);
  KILN_CHECK(input.rank() >= 1, op, "input must be [N, C, *] or [C], got a 0-d tensor");
  KILN_CHECK(target.defined(), op, "target is undefined");
  const std::int64_t classes = input.size(input.rank() == 1 ? 0 : 1);
  if (o.weight.defined()) {
    detail::check_float(op, "weight", o.weight);
    KILN_CHECK(o.weight.rank() == 1 && o.weight.size(0) == classes, op,
               "weight must be [" + std::to_string(classes) + "] (one per class of input " + input.shape().str() +
                   "), got " + o.weight.shape().str());
  }
  KILN_CHECK(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0, op,
             "label_smoothing must be between 0 and 1, got " + std::to_string(o.label_smoothing));
  if (is_floating(target.dtype())) {
    KILN_CHECK(
        target.shape() == input.shape(), op,
        "class-probability target " + target.shape().str() + " must have the shape of input " + input.shape().str());
    return;
  }
  KILN_CHECK(target.dtype() == DType::i64, op,
             std::string("target must hold i64 class indices or floating class probabilities, got ") +
                 dtype_name(target.dtype()));
  Shape expected = input.shape();
  expected.erase(input.rank() == 1 ? 0 : 1);
  KILN_CHECK(target.shape() == expected, op,
             "class-index target " + target.shape().str() + " must be " + expected.str() + " for input " +
                 input.shape().str() + " (its shape without the class dim)");
}

// logp [N, C, *] against probabilities [N, C, *]: per-sample -sum_c weight_c target_c logp_c.
Tensor probability_target_loss(Tensor logp, Tensor target, const ClassOptions& o) {
  const double classes = static_cast<double>(logp.size(1));
  if (o.label_smoothing > 0.0)
    target = add(mul(std::move(target), 1.0 - o.label_smoothing), o.label_smoothing / classes);
  Tensor terms = mul(std::move(logp), std::move(target));
  if (o.weight.defined()) terms = mul(std::move(terms), detail::channel_view(o.weight, terms.rank()));
  // mean over samples is torch's sum / (N * d1 * ...).
  return detail::reduce_loss(neg(sum(std::move(terms), {1})), o.reduction);
}

// logp [N, C, *] against class indices [N, *].
Tensor class_index_loss(const Tensor& logp, Tensor target, const ClassOptions& o) {
  Tensor valid = ne(target, static_cast<double>(o.ignore_index));
  // Ignored positions may hold any value (-100): pick class 0 there and mask the result.
  Tensor safe = masked_fill(std::move(target), logical_not(valid), 0.0);
  Tensor picked = squeeze(gather(logp, 1, unsqueeze(safe, 1)), 1);
  Tensor sample_weight;  // weight of each sample's class, 1 without class weights
  if (o.weight.defined()) {
    const Shape shape = safe.shape();
    sample_weight = reshape(index_select(o.weight, 0, reshape(std::move(safe), {shape.numel()})), shape.to_vector());
    picked = mul(std::move(picked), sample_weight);
  }
  Tensor loss = where(valid, neg(std::move(picked)), 0.0);
  if (o.label_smoothing > 0.0) {
    // torch: -sum_c weight_c logp_c per sample, masked like the nll term.
    Tensor all = o.weight.defined() ? mul(logp, detail::channel_view(o.weight, logp.rank())) : logp;
    Tensor smooth = where(valid, neg(sum(std::move(all), {1})), 0.0);
    const double eps = o.label_smoothing, classes = static_cast<double>(logp.size(1));
    loss = add(mul(std::move(loss), 1.0 - eps), mul(std::move(smooth), eps / classes));
  }
  if (o.reduction != Reduction::mean) return detail::reduce_loss(std::move(loss), o.reduction);
  // The mean divides by the total weight of the targets that count: 0 / 0 = NaN when every
  // target is ignored, as in torch.
  Tensor denominator = sample_weight.defined() ? where(std::move(valid), std::move(sample_weight), 0.0)
                                               : cast(std::move(valid), loss.dtype());
  return div(sum(std::move(loss)), sum(std::move(denominator)));
}

// Both losses: an unbatched input [C] is a batch of one whose per-sample loss is 0-d.
Tensor class_loss(const char* op, Tensor input, Tensor target, const ClassOptions& o, bool apply_log_softmax) {
  check_class_inputs(op, input, target, o);
  const bool unbatched = input.rank() == 1;
  if (unbatched) {
    input = unsqueeze(std::move(input), 0);
    target = unsqueeze(std::move(target), 0);
  }
  Tensor logp = apply_log_softmax ? log_softmax(std::move(input), 1) : std::move(input);
  Tensor loss = is_floating(target.dtype()) ? probability_target_loss(std::move(logp), std::move(target), o)
                                            : class_index_loss(logp, std::move(target), o);
  return unbatched && o.reduction == Reduction::none ? squeeze(std::move(loss), 0) : loss;
}

}  // namespace

Tensor cross_entropy(Tensor logits, Tensor target, const CrossEntropyOptions& options) {
  const ClassOptions o{options.weight, options.ignore_index, options.label_smoothing, options.reduction};
  return class_loss("cross_entropy", std::move(logits), std::move(target), o, true);
}

Tensor nll_loss(Tensor log_probs, Tensor target, const NllLossOptions& options) {
  KILN_CHECK(!target.defined() || target.dtype() == DType::i64, "nll_loss",
             std::string("target must hold i64 class indices, got ") + dtype_name(target.dtype()));
  const ClassOptions o{options.weight, options.ignore_index, 0.0, options.reduction};
  return class_loss("nll_loss", std::move(log_probs), std::move(target), o, false);
}

}  // namespace kiln::nn
