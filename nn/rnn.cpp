// LSTM and GRU: the cells' step math, the parameters under torch's names, and the walk over
// layers, directions and time.
#include "kiln/nn/rnn.h"

#include <cmath>
#include <string>

#include "kiln/nn/functional.h"

namespace kiln::nn {

namespace {

std::string shape_of(const Tensor& t) { return t.defined() ? t.shape().str() : std::string("undefined"); }

// The recurrent product h W_hhᵀ + b_hh: one matmul, its bias add (and the caller's add of the
// input projection) fused as the epilogue.
Tensor recurrent(const Tensor& h, const Tensor& weight_hh_t, const Tensor& bias_hh) {
  Tensor y = matmul(h, weight_hh_t);
  return bias_hh.defined() ? add(std::move(y), bias_hh) : y;
}

// torch's gate order i, f, g, o.
LSTMState lstm_step(const Tensor& gates_x, const LSTMState& s, const Tensor& weight_hh_t, const Tensor& bias_hh) {
  const std::vector<Tensor> g = chunk(add(recurrent(s.h, weight_hh_t, bias_hh), gates_x), 4, 1);
  Tensor c = add(mul(sigmoid(g[1]), s.c), mul(sigmoid(g[0]), tanh(g[2])));
  Tensor h = mul(sigmoid(g[3]), tanh(c));
  return {std::move(h), std::move(c)};
}

// torch's gate order r, z, n; b_hn stays inside the reset gate's product, so the n parts of the
// two projections are kept apart while r and z come from their sum.
LSTMState gru_step(const Tensor& gates_x, const LSTMState& s, const Tensor& weight_hh_t, const Tensor& bias_hh) {
  const Tensor gates_h = recurrent(s.h, weight_hh_t, bias_hh);
  const std::int64_t hidden = gates_h.size(1) / 3;
  // The sum's n part is not needed, but it is computed in the matmul's epilogue, and slicing
  // r and z straight out of it saves a copy per step.
  const Tensor sum_rz = add(gates_h, gates_x);
  Tensor r = sigmoid(narrow(sum_rz, 1, 0, hidden));
  Tensor z = sigmoid(narrow(sum_rz, 1, hidden, hidden));
  Tensor n_h = mul(std::move(r), narrow(gates_h, 1, 2 * hidden, hidden));
  Tensor n = tanh(add(narrow(gates_x, 1, 2 * hidden, hidden), std::move(n_h)));
  // (1 - z) n + z h, written as torch's kernels compute it.
  Tensor h = add(n, mul(std::move(z), sub(s.h, n)));
  return {std::move(h), Tensor{}};
}

}  // namespace

RNNBase::RNNBase(std::int64_t gates, bool cell_state, const char* type, std::int64_t input_size,
                 std::int64_t hidden_size, const RNNOptions& options)
    : gates_(gates), cell_state_(cell_state), input_size_(input_size), hidden_size_(hidden_size), options_(options) {
  KILN_CHECK(input_size > 0 && hidden_size > 0, type,
             "input_size and hidden_size must be positive, got " + std::to_string(input_size) + " and " +
                 std::to_string(hidden_size));
  KILN_CHECK(options.num_layers > 0, type, "num_layers must be positive, got " + std::to_string(options.num_layers));
  KILN_CHECK(options.dropout >= 0.0 && options.dropout <= 1.0, type,
             "dropout must be in [0, 1], got " + std::to_string(options.dropout));
  // torch's reset_parameters: every parameter U(-1/sqrt(H), 1/sqrt(H)), drawn in state_dict order.
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  const auto draw = [&](const Shape& shape) {
    return Parameter(uniform(shape, -bound, bound, default_generator(), TensorOptions{DType::f32, options.device}));
  };
  for (std::int64_t layer = 0; layer < options.num_layers; ++layer) {
    const std::int64_t in = layer == 0 ? input_size : hidden_size * num_directions();
    for (std::int64_t d = 0; d < num_directions(); ++d) {
      RecurrentWeights w;
      w.weight_ih = draw(Shape{gates * hidden_size, in});
      w.weight_hh = draw(Shape{gates * hidden_size, hidden_size});
      if (options.bias) {
        w.bias_ih = draw(Shape{gates * hidden_size});
        w.bias_hh = draw(Shape{gates * hidden_size});
      }
      cells_.push_back(std::move(w));
    }
  }
}

const RecurrentWeights& RNNBase::weights(std::int64_t layer, bool reverse) const {
  KILN_CHECK(layer >= 0 && layer < options_.num_layers && (!reverse || options_.bidirectional), where(),
             "no parameters for layer " + std::to_string(layer) + (reverse ? " (reverse)" : "") + " of " +
                 std::to_string(options_.num_layers) + (options_.bidirectional ? " bidirectional" : "") + " layers");
  return cells_[static_cast<std::size_t>(layer * num_directions() + (reverse ? 1 : 0))];
}

void RNNBase::visit_fields(FieldVisitor& v) {
  for (std::size_t k = 0; k < cells_.size(); ++k) {
    const std::int64_t layer = static_cast<std::int64_t>(k) / num_directions();
    const std::string suffix = "_l" + std::to_string(layer) + (k % 2 == 1 && options_.bidirectional ? "_reverse" : "");
    RecurrentWeights& w = cells_[k];
    v.field(("weight_ih" + suffix).c_str(), w.weight_ih);
    v.field(("weight_hh" + suffix).c_str(), w.weight_hh);
    v.field(("bias_ih" + suffix).c_str(), w.bias_ih);
    v.field(("bias_hh" + suffix).c_str(), w.bias_hh);
  }
}

std::string RNNBase::describe() const {
  std::string s = std::to_string(input_size_) + ", " + std::to_string(hidden_size_);
  if (options_.num_layers != 1) s += ", num_layers=" + std::to_string(options_.num_layers);
  if (!options_.bias) s += ", bias=false";
  if (options_.batch_first) s += ", batch_first=true";
  if (options_.dropout != 0.0) s += ", dropout=" + std::to_string(options_.dropout);
  if (options_.bidirectional) s += ", bidirectional=true";
  return s;
}

void RNNBase::check_state(const char* name, const Tensor& s, const Tensor& input) const {
  if (!s.defined()) return;
  std::vector<std::int64_t> want{num_directions() * options_.num_layers};
  if (input.rank() == 3) want.push_back(input.size(options_.batch_first ? 0 : 1));
  want.push_back(hidden_size_);
  KILN_CHECK(s.shape() == Shape(want), where(),
             std::string(name) + " must be " + Shape(want).str() + " for the input " + input.shape().str() + ", got " +
                 s.shape().str());
}

RNNBase::Result RNNBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0, Step step) const {
  const std::string layouts = options_.batch_first ? "[N, L, " : "[L, N, ";
  KILN_CHECK(input.defined() && (input.rank() == 2 || input.rank() == 3) && input.size(-1) == input_size_, where(),
             "expected an input " + layouts + std::to_string(input_size_) + "] or unbatched [L, " +
                 std::to_string(input_size_) + "], got " + shape_of(input));
  KILN_CHECK(is_floating(input.dtype()), where(),
             std::string("expected a floating-point input, got ") + dtype_name(input.dtype()) + input.shape().str());
  const bool batched = input.rank() == 3;
  KILN_CHECK(input.size(batched && options_.batch_first ? 1 : 0) > 0, where(),
             "the input sequence is empty: " + input.shape().str());
  check_state("h0", h0, input);
  check_state("c0", c0, input);

  return guarded([&] {
    // Internally [L, N, features] and states [D * layers, N, H].
    Tensor x = !batched ? unsqueeze(input, 1) : options_.batch_first ? transpose(input, 0, 1) : input;
    const auto batch_state = [&](const Tensor& s) { return !s.defined() || batched ? s : unsqueeze(s, 1); };
    const Tensor h_all = batch_state(h0), c_all = batch_state(c0);
    const std::int64_t n = x.size(1), layers = options_.num_layers;
    const auto initial = [&](const Tensor& all, std::int64_t k) {
      return all.defined() ? reshape(narrow(all, 0, k, 1), {n, hidden_size_})
                           : zeros(Shape{n, hidden_size_}, TensorOptions{x.dtype(), x.device()});
    };

    std::optional<Generator> gen;  // made on first use: one per call, shared by its layers
    std::vector<Tensor> hs, cs;
    for (std::int64_t layer = 0; layer < layers; ++layer) {
      std::vector<Tensor> outs;
      for (std::int64_t d = 0; d < num_directions(); ++d) {
        const std::int64_t k = layer * num_directions() + d;
        LSTMState start{initial(h_all, k), cell_state_ ? initial(c_all, k) : Tensor{}};
        LSTMState last;
        outs.push_back(run_direction(x, std::move(start), cells_[static_cast<std::size_t>(k)], d == 1, step, last));
        hs.push_back(std::move(last.h));
        if (cell_state_) cs.push_back(std::move(last.c));
      }
      x = outs.size() == 1 ? std::move(outs[0]) : cat(outs, 2);
      if (is_training() && options_.dropout > 0.0 && layer + 1 < layers) {
        if (!gen) {
          // As nn::Dropout: the call's number picks the stream (SplitMix64's odd constant).
          const std::uint64_t call = calls_->fetch_add(1, std::memory_order_relaxed);
          gen.emplace(options_.dropout_seed ^ ((call + 1) * 0x9E3779B97F4A7C15ULL));
        }
        x = dropout(std::move(x), options_.dropout, true, *gen);
      }
    }

    Result r{std::move(x), stack(hs, 0), cell_state_ ? stack(cs, 0) : Tensor{}};
    if (!batched) {
      r.output = squeeze(std::move(r.output), 1);
      r.h_n = squeeze(std::move(r.h_n), 1);
      if (cell_state_) r.c_n = squeeze(std::move(r.c_n), 1);
    } else if (options_.batch_first) {
      r.output = transpose(std::move(r.output), 0, 1);
    }
    return r;
  });
}

Tensor RNNBase::run_direction(const Tensor& x, LSTMState state, const RecurrentWeights& w, bool reverse, Step step,
                              LSTMState& final_state) const {
  const std::int64_t steps = x.size(0), n = x.size(1);
  // The input projection of the whole sequence at once, then cut into steps.
  std::vector<Tensor> gates_x = split(linear(x, w.weight_ih, w.bias_ih), 1, 0);
  // transpose copies: once here, so its gradient is also one transpose of the summed steps'.
  const Tensor weight_hh_t = transpose(w.weight_hh, 0, 1);
  std::vector<Tensor> hs(static_cast<std::size_t>(steps));
  for (std::int64_t i = 0; i < steps; ++i) {
    const auto t = static_cast<std::size_t>(reverse ? steps - 1 - i : i);
    state = step(reshape(std::move(gates_x[t]), {n, gates_ * hidden_size_}), state, weight_hh_t, w.bias_hh);
    hs[t] = state.h;
  }
  final_state = std::move(state);
  return stack(hs, 0);
}

LSTM::LSTM(std::int64_t input_size, std::int64_t hidden_size, const RNNOptions& options)
    : RNNBase(4, true, "LSTM", input_size, hidden_size, options) {}

LSTMOutput LSTM::forward(const Tensor& input, const std::optional<LSTMState>& initial) const {
  if (initial)
    KILN_CHECK(initial->h.defined() && initial->c.defined(), where(),
               "an initial state needs both h and c, got h " + shape_of(initial->h) + " and c " + shape_of(initial->c));
  Result r = run(input, initial ? initial->h : Tensor{}, initial ? initial->c : Tensor{}, lstm_step);
  return {std::move(r.output), {std::move(r.h_n), std::move(r.c_n)}};
}

GRU::GRU(std::int64_t input_size, std::int64_t hidden_size, const RNNOptions& options)
    : RNNBase(3, false, "GRU", input_size, hidden_size, options) {}

GRUOutput GRU::forward(const Tensor& input, const Tensor& h0) const {
  Result r = run(input, h0, Tensor{}, gru_step);
  return {std::move(r.output), std::move(r.h_n)};
}

}  // namespace kiln::nn
