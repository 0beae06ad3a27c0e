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

struct GELUOptions {
  bool tanh_approximation = false;  // torch's approximate='tanh'
};

class GELU : public Module {
 public:
  using Options = GELUOptions;
  explicit GELU(const GELUOptions& options = {}) : tanh_(options.tanh_approximation) {}
  Tensor forward(Tensor x) const;
  std::string describe() const override { return tanh_ ? "approximate=tanh" : ""; }
  KILN_MODULE(GELU)

 private:
  bool tanh_;
};

struct LeakyReLUOptions {
  double negative_slope = 0.01;
};

class LeakyReLU : public Module {
 public:
  using Options = LeakyReLUOptions;
  explicit LeakyReLU(const LeakyReLUOptions& options = {}) : slope_(options.negative_slope) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "negative_slope=" + format_setting(slope_); }
  KILN_MODULE(LeakyReLU)

 private:
  double slope_;
};

struct ELUOptions {
  double alpha = 1.0;
};

class ELU : public Module {
 public:
  using Options = ELUOptions;
  explicit ELU(const ELUOptions& options = {}) : alpha_(options.alpha) {}
  Tensor forward(const Tensor& x) const;
  std::string describe() const override { return "alpha=" + format_setting(alpha_); }
  KILN_MODULE(ELU)

 private:
  double alpha_;
};

struct PReLUOptions {
  double init = 0.25;  // every slope's first value
  Device device = Device::cpu();
};

// A learned negative slope: one for all channels, or one per channel (dim 1).
class PReLU : public Module {
 public:
  using Options = PReLUOptions;
  explicit PReLU(std::int64_t num_parameters = 1, const PReLUOptions& options = {});
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
struct DropoutOptions {
  double p = 0.5;  // the probability of zeroing an element
  // Without a seed, one is drawn from kiln's default generator (seed that with manual_seed).
  std::optional<std::uint64_t> seed{};
};

class Dropout : public Module {
 public:
  using Options = DropoutOptions;
  explicit Dropout(const DropoutOptions& options = {});
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
