// Recurrent ONNX ops: RNN, GRU, LSTM (forward, reverse, bidirectional; layout 0 and 1), one
// step at a time with kiln's public ops, so gradients flow through time. The input projection
// of every step is one matmul up front; each step adds the recurrent product.
#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {
namespace {

using Activation = std::function<Tensor(Tensor)>;

Activation activation(const OpContext& ctx, const std::string& name, float alpha, float beta) {
  if (name == "Sigmoid") return [](Tensor x) { return sigmoid(std::move(x)); };
  if (name == "Tanh") return [](Tensor x) { return tanh(std::move(x)); };
  if (name == "Relu") return [](Tensor x) { return relu(std::move(x)); };
  if (name == "HardSigmoid")
    return [alpha, beta](Tensor x) { return clamp(x * double(alpha) + double(beta), 0.0, 1.0); };
  if (name == "LeakyRelu") return [alpha](Tensor x) { return where(lt(x, 0.0), x * double(alpha), x); };
  if (name == "Affine") return [alpha, beta](Tensor x) { return x * double(alpha) + double(beta); };
  ctx.unsupported("activation " + name);
}

enum class Cell { rnn, gru, lstm };

struct RecurrentSpec {
  Cell cell;
  std::int64_t gates;                            // 1, 3, 4
  std::vector<std::string> default_activations;  // per direction
};

Values recurrent(OpContext& ctx, const Values& in, const RecurrentSpec& spec) {
  ctx.check(in.size() >= 3 && in[0].defined() && in[1].defined() && in[2].defined(), "needs X, W and R");
  const bool batch_first = ctx.node.i("layout", 0) != 0;
  Tensor x = ctx.tensor(in[0]);
  ctx.check(x.rank() == 3, "X must be 3-D, got " + x.shape().str());
  if (batch_first) x = transpose(x, 0, 1);  // [seq, batch, input]
  const Tensor w = ctx.tensor(in[1]), r = ctx.tensor(in[2]);
  const std::int64_t seq = x.shape()[0], batch = x.shape()[1];
  const std::string direction = ctx.node.s("direction", "forward");
  const std::int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const std::int64_t hidden = ctx.node.i("hidden_size", r.shape()[2]);
  const std::int64_t g = spec.gates;
  ctx.check(w.rank() == 3 && w.shape()[0] == dirs && w.shape()[1] == g * hidden && w.shape()[2] == x.shape()[2],
            "W " + w.shape().str() + " does not fit X " + x.shape().str() + ", hidden_size " + std::to_string(hidden));
  ctx.check(r.rank() == 3 && r.shape()[0] == dirs && r.shape()[1] == g * hidden && r.shape()[2] == hidden,
            "R " + r.shape().str() + " does not fit hidden_size " + std::to_string(hidden));
  if (ctx.has_input(in, 4)) {
    for (auto len : ctx.ints(in[4])) {
      if (len != seq) ctx.unsupported("sequence_lens shorter than the sequence");
    }
  }
  if (spec.cell == Cell::lstm && ctx.node.i("input_forget", 0) != 0) ctx.unsupported("LSTM input_forget");
  const float clip = ctx.node.f("clip", 0.0f);
  auto names = ctx.node.strings_or("activations", {});
  const auto alphas = ctx.node.floats("activation_alpha"), betas = ctx.node.floats("activation_beta");
  const std::size_t per_dir = spec.default_activations.size();
  if (names.empty())
    for (std::int64_t d = 0; d < dirs; ++d)
      names.insert(names.end(), spec.default_activations.begin(), spec.default_activations.end());
  ctx.check(names.size() == per_dir * std::size_t(dirs), "activations has " + std::to_string(names.size()) + " names");

  // Initial states [dirs, batch, hidden] (batch first when layout is 1).
  const auto initial = [&](std::size_t k) {
    if (!ctx.has_input(in, k)) return zeros({dirs, batch, hidden}, {x.dtype(), ctx.device});
    Tensor t = ctx.tensor(in[k]);
    return batch_first ? transpose(t, 0, 1) : t;
  };
  const Tensor h0 = initial(5);
  const Tensor c0 = spec.cell == Cell::lstm ? initial(6) : Tensor{};

  std::vector<Tensor> ys, hs, cs;
  for (std::int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    std::vector<Activation> act;
    for (std::size_t k = 0; k < per_dir; ++k) {
      const std::size_t idx = std::size_t(d) * per_dir + k;
      act.push_back(activation(ctx, names[idx], idx < alphas.size() ? alphas[idx] : 0.01f,
                               idx < betas.size() ? betas[idx] : 0.0f));
    }
    const Tensor wd = squeeze(slice(w, 0, d, d + 1), 0), rd = squeeze(slice(r, 0, d, d + 1), 0);
    // Every step's input projection at once: [seq, batch, g * hidden].
    Tensor xw = matmul(x, wd, {false, true});
    Tensor rb;  // GRU with linear_before_reset keeps the recurrent bias of h apart
    if (ctx.has_input(in, 3)) {
      const Tensor b = squeeze(slice(ctx.tensor(in[3]), 0, d, d + 1), 0);  // [2 * g * hidden]
      const Tensor wb = slice(b, 0, 0, g * hidden), rbias = slice(b, 0, g * hidden, 2 * g * hidden);
      if (spec.cell == Cell::gru) {
        xw = xw + wb + cat({slice(rbias, 0, 0, 2 * hidden), zeros({hidden}, {x.dtype(), ctx.device})}, 0);
        rb = slice(rbias, 0, 2 * hidden, 3 * hidden);
      } else {
        xw = xw + (wb + rbias);
      }
    }
    Tensor peep;
    if (spec.cell == Cell::lstm && ctx.has_input(in, 7)) peep = squeeze(slice(ctx.tensor(in[7]), 0, d, d + 1), 0);
    const auto clipped = [&](Tensor t) { return clip > 0 ? clamp(t, -double(clip), double(clip)) : t; };
    Tensor h = squeeze(slice(h0, 0, d, d + 1), 0);
    Tensor c = c0.defined() ? squeeze(slice(c0, 0, d, d + 1), 0) : Tensor{};
    std::vector<Tensor> steps{std::size_t(seq)};
    for (std::int64_t s = 0; s < seq; ++s) {
      const std::int64_t t = reverse ? seq - 1 - s : s;
      const Tensor xt = squeeze(slice(xw, 0, t, t + 1), 0);  // [batch, g * hidden]
      const auto gate = [&](const Tensor& all, std::int64_t k) { return slice(all, 1, k * hidden, (k + 1) * hidden); };
      if (spec.cell == Cell::rnn) {
        h = act[0](clipped(xt + matmul(h, rd, {false, true})));
      } else if (spec.cell == Cell::gru) {
        const Tensor rz_r = matmul(h, slice(rd, 0, 0, 2 * hidden), {false, true});
        const Tensor z = act[0](clipped(gate(xt, 0) + gate(rz_r, 0)));
        const Tensor rr = act[0](clipped(gate(xt, 1) + gate(rz_r, 1)));
        const Tensor rh = slice(rd, 0, 2 * hidden, 3 * hidden);
        Tensor hh;
        if (ctx.node.i("linear_before_reset", 0) != 0) {
          Tensor hr = matmul(h, rh, {false, true});
          if (rb.defined()) hr = hr + rb;
          hh = act[1](clipped(gate(xt, 2) + rr * hr));
        } else {
          Tensor hr = matmul(rr * h, rh, {false, true});
          if (rb.defined()) hr = hr + rb;
          hh = act[1](clipped(gate(xt, 2) + hr));
        }
        h = (1.0 - z) * hh + z * h;
      } else {
        const Tensor all = xt + matmul(h, rd, {false, true});  // gates i, o, f, c
        Tensor i_pre = gate(all, 0), f_pre = gate(all, 2), o_pre = gate(all, 1);
        if (peep.defined()) {
          i_pre = i_pre + slice(peep, 0, 0, hidden) * c;
          f_pre = f_pre + slice(peep, 0, 2 * hidden, 3 * hidden) * c;
        }
        const Tensor i = act[0](clipped(i_pre)), f = act[0](clipped(f_pre));
        const Tensor cand = act[1](clipped(gate(all, 3)));
        c = f * c + i * cand;
        if (peep.defined()) o_pre = o_pre + slice(peep, 0, hidden, 2 * hidden) * c;
        const Tensor o = act[0](clipped(o_pre));
        h = o * act[2](c);
      }
      steps[std::size_t(t)] = h;
    }
    ys.push_back(stack(steps, 0));  // [seq, batch, hidden]
    hs.push_back(h);
    if (c.defined()) cs.push_back(c);
  }
  Tensor y = stack(ys, 1);   // [seq, dirs, batch, hidden]
  Tensor yh = stack(hs, 0);  // [dirs, batch, hidden]
  Tensor yc = cs.empty() ? Tensor{} : stack(cs, 0);
  if (batch_first) {
    y = permute(y, {2, 0, 1, 3});  // [batch, seq, dirs, hidden]
    yh = transpose(yh, 0, 1);
    if (yc.defined()) yc = transpose(yc, 0, 1);
  }
  Values out{Value::of(y), Value::of(yh)};
  if (yc.defined()) out.push_back(Value::of(yc));
  return out;
}

}  // namespace

void add_rnn_ops(OpTable& t) {
  t["RNN"] = [](OpContext& ctx, const Values& in) { return recurrent(ctx, in, {Cell::rnn, 1, {"Tanh"}}); };
  t["GRU"] = [](OpContext& ctx, const Values& in) { return recurrent(ctx, in, {Cell::gru, 3, {"Sigmoid", "Tanh"}}); };
  t["LSTM"] = [](OpContext& ctx, const Values& in) {
    return recurrent(ctx, in, {Cell::lstm, 4, {"Sigmoid", "Tanh", "Tanh"}});
  };
}

}  // namespace kiln::onnx::detail
