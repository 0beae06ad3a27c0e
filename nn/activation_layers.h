// Activations as modules (for Sequential and for summaries), and Dropout. Each forward is the
// functional op of the same name (engine/elementwise.h, nn/functional.h), so it fuses.
#pragma once
#include <atomic>
#include <optional>

#include "kiln/nn/module.h"

namespace kiln::nn {

// A parameter-free module whose forward is one function of its input. It takes the input by
// value: a caller that hands it over (Sequential does) lets the op consume it.
#define KILN_NN_ACTIVATION(Type)                       \
  class Type : public Module {                         \
   public:                                             \
    Tensor forward(Tensor x) const;                    \
    KILN_MODULE(Type)                                  \
  };
KILN_NN_ACTIVATION(ReLU)
KILN_NN_ACTIVATION(SiLU)
KILN_NN_ACTIVATION(Mish)
KILN_NN_ACTIVATION(Tanh)
KILN_NN_ACTIVATION(Sigmoid)
#undef KILN_NN_ACTIVATION

class GELU : public Module {
 public:
  // tanh_approximation: torch's approximate='tanh'.
  explicit GELU(bool tanh_approximation = false) : tanh_(tanh_approximation) {}
  Tensor forward(Tensor x) const;
  std::string describe() const override { return tanh_ ? "approximate=tanh" : ""; }
  KILN_MODULE(GELU)

 private:
  bool tanh_;
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : slope_(negative_slope) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "negative_slope=" + format_setting(slope_); }
  KILN_MODULE(LeakyReLU)

 private:
  double slope_;
};

class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0) : alpha_(alpha) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "alpha=" + format_setting(alpha_); }
  KILN_MODULE(ELU)

 private:
  double alpha_;
};

// A learned negative slope: one for all channels, or one per channel (dim 1). weight starts at `init`.
class PReLU : public Module {
 public:
  explicit PReLU(std::int64_t num_parameters = 1, double init = 0.25, Device device = Device::cpu());
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "num_parameters=" + std::to_string(weight.shape()[0]); }

  Parameter weight;
  KILN_MODULE(PReLU, weight)
};

class Softmax : public Module {
 public:
  explicit Softmax(std::int64_t dim) : dim_(dim) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "dim=" + std::to_string(dim_); }
  KILN_MODULE(Softmax)

 private:
  std::int64_t dim_;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(std::int64_t dim) : dim_(dim) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "dim=" + std::to_string(dim_); }
  KILN_MODULE(LogSoftmax)

 private:
  std::int64_t dim_;
};

// Zeroes each element with probability p in training mode and scales the rest by 1 / (1 - p);
// the identity in eval mode. Each forward draws a new mask from (seed, call number): the calls
// are numbered atomically, so forwards on many threads at once stay safe and reproducible per
// call order. Copies share the counter; clone() too (it copies tensors, and Dropout has none).
// Without a seed, one is drawn from kiln's default generator (seed that with manual_seed).
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, std::optional<std::uint64_t> seed = std::nullopt);
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "p=" + format_setting(p_); }
  std::atomic<std::uint64_t>* random_draws() override { return calls_.get(); }
  KILN_MODULE(Dropout)

 private:
  double p_;
  std::uint64_t seed_;
  std::shared_ptr<std::atomic<std::uint64_t>> calls_ = std::make_shared<std::atomic<std::uint64_t>>(0);
};

}  // namespace kiln::nn
