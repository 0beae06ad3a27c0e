// Vector exp loops of softmax and logsumexp (devices/cpu/fast_exp.h, at most 0.91 ulp). The tail
// of a run goes through the same vector code as its body (padded), so an element's value never
// depends on where it falls in the run.
#pragma once
#include <cstdint>

namespace kiln::cpu {

// y[i] = exp(x[i] - c[i * c_stride]), c_stride 0 or 1; y may be x.
void exp_shifted(const float* x, const float* c, std::int64_t c_stride, float* y, std::int64_t n);

// y[i] = exp(x[i] - c) (y may be x, or nullptr to only sum) and returns the sum of those
// values, added in a fixed lane order.
float exp_shifted_sum(const float* x, float c, float* y, std::int64_t n);

}  // namespace kiln::cpu
