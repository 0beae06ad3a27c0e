// Checks, small reshapes and the loss reduction shared by the functional ops and losses
// (nn/*.cpp only).
#pragma once
#include <string>

#include "kiln/engine/kiln.h"
#include "kiln/nn/loss.h"

namespace kiln::nn::detail {

// "[2, 3]", or "undefined" for an empty handle: for error messages.
inline std::string shape_str(const Tensor& t) { return t.defined() ? t.shape().str() : std::string("undefined"); }

// Throws kiln::Error naming `op` unless `t` is a defined floating-point tensor.
inline void check_float(const char* op, const char* what, const Tensor& t) {
  KILN_CHECK(t.defined(), op, std::string(what) + " is undefined");
  KILN_CHECK(is_floating(t.dtype()), op,
             std::string(what) + " must be a floating-point tensor, got " + dtype_name(t.dtype()));
}

// Throws unless `t` is undefined or a 1-D tensor of `channels` elements (a per-channel
// parameter such as a norm's weight).
inline void check_per_channel(const char* op, const char* what, const Tensor& t, std::int64_t channels,
                              const Tensor& x) {
  if (!t.defined()) return;
  KILN_CHECK(t.rank() == 1 && t.size(0) == channels, op,
             std::string(what) + " must be [" + std::to_string(channels) + "] (one per channel of input " +
                 x.shape().str() + "), got " + t.shape().str());
}

// A per-channel tensor [C] as [C, 1, ..., 1], so that it broadcasts along dim 1 of a tensor of
// rank `rank` ([N, C, *]).
inline Tensor channel_view(Tensor t, int rank) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank > 1 ? rank - 1 : 1), 1);
  dims[0] = t.numel();
  return reshape(std::move(t), dims);
}

// Throws unless `reduction` is one a loss other than kl_div takes (batchmean is kl_div's).
inline void check_reduction(const char* op, Reduction reduction) {
  KILN_CHECK(reduction != Reduction::batchmean, op, "reduction batchmean is only defined for kl_div");
}

// Combines per-element losses as `reduction` asks (checked by check_reduction first).
inline Tensor reduce_loss(Tensor loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::sum: return sum(std::move(loss));
    case Reduction::mean: return mean(std::move(loss));
    case Reduction::batchmean:  // kl_div handles it; others rejected it already
    case Reduction::none: break;
  }
  return loss;
}

// Throws unless a and b are defined floating tensors of the same shape.
inline void check_same_shape(const char* op, const char* what_a, const Tensor& a, const char* what_b, const Tensor& b) {
  check_float(op, what_a, a);
  check_float(op, what_b, b);
  KILN_CHECK(a.shape() == b.shape(), op,
             std::string(what_a) + " " + a.shape().str() + " and " + what_b + " " + b.shape().str() +
                 " must have the same shape");
}

}  // namespace kiln::nn::detail
