// Recurrent layers: LSTM and GRU, with torch.nn.LSTM's and torch.nn.GRU's parameters, gate
// order, options and shapes, so weights move both ways.
//
//   nn::LSTM lstm(16, 32, {.num_layers = 2, .bidirectional = true});
//   auto [y, state] = lstm(x);          // x [L, N, 16] -> y [L, N, 64]; state.h, state.c [4, N, 32]
//   nn::GRU gru(16, 32, {.batch_first = true});
//   auto [z, h_n] = gru(x_nlc, h0);     // x [N, L, 16], h0 [1, N, 32]
//
// Each layer and direction multiplies the whole input sequence by its input weights once, then
// steps through time with one recurrent matmul and the gate math (elementwise, fused) per step.
// Everything is kiln's public ops, so it runs on every device and gradients come from autograd.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// LSTM's state: h and c, each [D * num_layers, N, H] ([D * num_layers, H] for unbatched input),
// D = 2 when bidirectional.
struct LSTMState {
  Tensor h, c;
};

struct RNNOptions {
  std::int64_t num_layers = 1;
  bool bias = true;
  // Input and output [N, L, features] instead of [L, N, features]; the states stay
  // [D * num_layers, N, H], as in torch.
  bool batch_first = false;
  // Dropout on the outputs of every layer but the last, in training mode only. Each forward
  // draws its masks from (dropout_seed, the call's number), as nn::Dropout does.
  double dropout = 0.0;
  bool bidirectional = false;
  Device device = Device::cpu();  // where the parameters start
  std::uint64_t dropout_seed = 0x726e6e64ULL;
};

// The parameters of one layer in one direction, under torch's names: weight_ih_l{k}[_reverse]
// [G * H, in] (in = input_size for layer 0, D * H above it), weight_hh_l{k}[_reverse] [G * H, H],
// bias_ih_l{k}[_reverse] and bias_hh_l{k}[_reverse] [G * H] (undefined without bias).
// G = 4 for LSTM (gates i, f, g, o), 3 for GRU (r, z, n).
struct RecurrentWeights {
  Parameter weight_ih, weight_hh, bias_ih, bias_hh;
};

// What LSTM and GRU share: the options, the per-layer parameters under torch's flat names, and
// the walk over layers, directions and time steps. The step of one cell is the subclass's.
class RNNBase : public Module {
 public:
  std::int64_t input_size() const { return input_size_; }
  std::int64_t hidden_size() const { return hidden_size_; }
  const RNNOptions& options() const { return options_; }
  std::int64_t num_directions() const { return options_.bidirectional ? 2 : 1; }
  // The parameters of layer `layer` (0-based) in one direction.
  const RecurrentWeights& weights(std::int64_t layer, bool reverse = false) const;

  // Parameters are visited as torch orders its state_dict: by layer, then direction, then
  // weight_ih, weight_hh, bias_ih, bias_hh.
  void visit_fields(FieldVisitor& v) override;
  std::string describe() const override;
  std::atomic<std::uint64_t>* random_draws() override { return calls_.get(); }

 protected:
  // One time step of one cell: gates_x is the step's input projection x_t W_ihᵀ + b_ih
  // [N, G * H], state the previous one ([N, H] each; c is LSTM's only), weight_hh_t is W_hhᵀ
  // (transposed once per sequence, not per step), bias_hh may be undefined. Returns the next state.
  using Step = LSTMState (*)(const Tensor& gates_x, const LSTMState& state, const Tensor& weight_hh_t,
                             const Tensor& bias_hh);
  struct Result {
    Tensor output, h_n, c_n;  // c_n only with a cell state
  };

  // gates: G; cell_state: whether the layer carries c (LSTM); type: the name for errors.
  RNNBase(std::int64_t gates, bool cell_state, const char* type, std::int64_t input_size, std::int64_t hidden_size,
          const RNNOptions& options);
  // Checks shapes (naming where() and the shapes), runs every layer and direction, and restores
  // the caller's layout (batch_first, unbatched). h0 and c0 may be undefined (zeros).
  Result run(const Tensor& input, const Tensor& h0, const Tensor& c0, Step step) const;

 private:
  Tensor run_direction(const Tensor& x, LSTMState state, const RecurrentWeights& w, bool reverse, Step step,
                       LSTMState& final_state) const;
  void check_state(const char* name, const Tensor& s, const Tensor& input) const;

  std::int64_t gates_;
  bool cell_state_;
  std::int64_t input_size_, hidden_size_;
  RNNOptions options_;
  std::vector<RecurrentWeights> cells_;  // layer * num_directions + direction
  std::shared_ptr<std::atomic<std::uint64_t>> calls_ = std::make_shared<std::atomic<std::uint64_t>>(0);
};

struct LSTMOutput {
  Tensor output;  // [L, N, D * H] ([N, L, D * H] batch_first, [L, D * H] unbatched)
  LSTMState state;
};

// i = σ(W_ii x + b_ii + W_hi h + b_hi), f, g (tanh), o likewise; c' = f c + i g; h' = o tanh(c').
class LSTM : public RNNBase {
 public:
  using Options = RNNOptions;
  LSTM(std::int64_t input_size, std::int64_t hidden_size, const RNNOptions& options = {});
  // input [L, N, input_size] ([N, L, input_size] batch_first, or unbatched [L, input_size]);
  // the initial state defaults to zeros.
  LSTMOutput forward(const Tensor& input, const std::optional<LSTMState>& initial = std::nullopt) const;
  KILN_MODULE_COMMON(LSTM)
};

struct GRUOutput {
  Tensor output;  // as LSTMOutput's
  Tensor h_n;     // [D * num_layers, N, H] ([D * num_layers, H] unbatched)
};

// r = σ(W_ir x + b_ir + W_hr h + b_hr), z likewise, n = tanh(W_in x + b_in + r (W_hn h + b_hn)),
// h' = (1 - z) n + z h.
class GRU : public RNNBase {
 public:
  using Options = RNNOptions;
  GRU(std::int64_t input_size, std::int64_t hidden_size, const RNNOptions& options = {});
  // input as LSTM's; h0 [D * num_layers, N, H] ([D * num_layers, H] unbatched), zeros by default.
  GRUOutput forward(const Tensor& input, const Tensor& h0 = {}) const;
  KILN_MODULE_COMMON(GRU)
};

}  // namespace kiln::nn
