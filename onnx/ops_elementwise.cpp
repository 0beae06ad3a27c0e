// Elementwise ONNX ops: unary math and activations, binary arithmetic and comparisons (numpy
// broadcasting, as kiln's binary ops), variadic Sum/Mean/Max/Min, Where, Clip, Cast. Integer
// arithmetic on host values (shape tensors) stays on the host.
#include <cmath>

#include "kiln/nn/functional.h"
#include "kiln/onnx/host_eval.h"
#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {
namespace {

using Unary = std::function<Tensor(const OpContext&, Tensor)>;

void unary(OpTable& t, const std::string& name, Unary fn) {
  t[name] = [fn](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs one input");
    return std::vector<Value>{Value::of(fn(ctx, ctx.tensor(in[0])))};
  };
}

void simple(OpTable& t, const std::string& name, Tensor (*fn)(Tensor)) {
  unary(t, name, [fn](const OpContext&, Tensor x) { return fn(std::move(x)); });
}

// A unary op that also has a host form, for f32 values known on the host (shape arithmetic such
// as attention's 1 / sqrt(d), which PyTorch 2's exporter computes from the input's Shape): they
// stay on the host, so the scale reaches its Mul as a number, not as device work and a tensor.
// Only correctly rounded ops: `on_host` in double, rounded once to f32, is then what the device
// computes in f32.
void simple_with_host(OpTable& t, const std::string& name, Tensor (*fn)(Tensor), double (*on_host)(double)) {
  t[name] = [fn, on_host](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs one input");
    const Value& x = in[0];
    if (x.on_host() && x.dtype() == DType::f32 && x.host->numel() <= kHostLimit) {
      HostTensor r = *x.host;
      for (float& v : r.floats) v = static_cast<float>(on_host(static_cast<double>(v)));
      return std::vector<Value>{Value::of(std::move(r))};
    }
    return std::vector<Value>{Value::of(fn(ctx.tensor(x)))};
  };
}

// A binary op with an optional host form for integer (shape) arithmetic.
struct HostForm {
  std::function<std::int64_t(std::int64_t, std::int64_t)> ints;
  std::function<double(double, double)> floats;
  bool comparison = false;  // bool result
};

// The forms of an arithmetic op with one operand a number (kiln's scalar overloads).
struct ScalarForm {
  Tensor (*rhs)(Tensor, double);
  Tensor (*lhs)(double, Tensor);
};

// The f32 constant of one element (a Constant node's value, e.g. LayerNorm's epsilon or
// attention's 1 / sqrt(d) scale) beside an f32 device tensor whose shape it leaves as it is.
bool is_scalar_constant_of(const Value& c, const Value& x) {
  return c.on_host() && c.dtype() == DType::f32 && c.host->numel() == 1 && c.rank() <= x.rank() && !x.on_host() &&
         x.dtype() == DType::f32;
}

void binary(OpTable& t, const std::string& name, Tensor (*fn)(Tensor, Tensor), std::optional<HostForm> host = {},
            std::optional<ScalarForm> scalar = {}) {
  t[name] = [fn, host, scalar, name](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(in.size() == 2 && in[0].defined() && in[1].defined(), "needs two inputs");
    const auto shape = broadcast_shapes(in[0].shape(), in[1].shape());
    ctx.check(shape.has_value(),
              "shapes " + shape_str(in[0].shape()) + " and " + shape_str(in[1].shape()) + " do not broadcast");
    if (host && all_on_host(in)) {
      std::int64_t n = 1;
      for (auto d : *shape) n *= d;
      if (n <= kHostLimit) {
        const DType out = host->comparison ? DType::bool_ : in[0].dtype();
        return std::vector<Value>{Value::of(host_binary(*in[0].host, *in[1].host, out, host->ints, host->floats))};
      }
    }
    // A constant number stays a number in the op (the same f32 arithmetic): no upload of a
    // one-element tensor each run, and one input fewer for the fused kernel.
    if (scalar && is_scalar_constant_of(in[1], in[0]))
      return std::vector<Value>{Value::of(scalar->rhs(ctx.tensor(in[0]), in[1].host->at(0)))};
    if (scalar && is_scalar_constant_of(in[0], in[1]))
      return std::vector<Value>{Value::of(scalar->lhs(in[0].host->at(0), ctx.tensor(in[1])))};
    return std::vector<Value>{Value::of(fn(ctx.tensor(in[0]), ctx.tensor(in[1])))};
  };
}

Tensor add_t(Tensor a, Tensor b) { return add(std::move(a), std::move(b)); }
Tensor sub_t(Tensor a, Tensor b) { return sub(std::move(a), std::move(b)); }
Tensor mul_t(Tensor a, Tensor b) { return mul(std::move(a), std::move(b)); }
Tensor div_t(Tensor a, Tensor b) {
  if (a.dtype() == DType::i64 && b.dtype() == DType::i64) {
    // ONNX integer division truncates toward zero (C); compute in f32-free form:
    // trunc(a / b) = sign * floor(|a| / |b|).
    const Tensor q = div(abs(a), abs(b));
    const Tensor floored = cast(floor(cast(q, DType::f32)), DType::i64);
    return mul(floored, mul(sign(a), sign(b)));
  }
  return div(std::move(a), std::move(b));
}
Tensor pow_t(Tensor a, Tensor b) {
  const DType out = a.dtype();
  if (b.dtype() != out) b = cast(b, is_floating(out) ? out : DType::f32);
  if (!is_floating(out)) return cast(pow(cast(a, DType::f32), cast(b, DType::f32)), out);
  return pow(std::move(a), std::move(b));
}

// x ** e for a constant exponent that has a cheaper exact form, as PyTorch computes these
// (its pow special-cases the same exponents): LayerNorm's opset-14 export squares through
// Pow(x, 2), which otherwise runs a vector powf per element. Square, sqrt and reciprocal are
// correctly rounded, so they equal powf's correctly rounded result; x * x * x is torch's cube.
std::optional<Tensor> pow_by_constant(const Tensor& x, double e) {
  if (e == 1.0) return x;
  if (e == 2.0) return square(x);
  if (e == 3.0) return square(x) * x;
  if (e == 0.5) return sqrt(x);
  if (e == -0.5) return rsqrt(x);
  if (e == -1.0) return reciprocal(x);
  if (e == -2.0) return reciprocal(square(x));
  return std::nullopt;
}
Tensor eq_t(Tensor a, Tensor b) { return eq(std::move(a), std::move(b)); }
Tensor lt_t(Tensor a, Tensor b) { return lt(std::move(a), std::move(b)); }
Tensor le_t(Tensor a, Tensor b) { return le(std::move(a), std::move(b)); }
Tensor gt_t(Tensor a, Tensor b) { return gt(std::move(a), std::move(b)); }
Tensor ge_t(Tensor a, Tensor b) { return ge(std::move(a), std::move(b)); }
Tensor and_t(Tensor a, Tensor b) { return logical_and(std::move(a), std::move(b)); }
Tensor or_t(Tensor a, Tensor b) { return logical_or(std::move(a), std::move(b)); }
Tensor xor_t(Tensor a, Tensor b) { return logical_xor(std::move(a), std::move(b)); }

std::int64_t trunc_div(std::int64_t a, std::int64_t b) { return b == 0 ? 0 : (a == INT64_MIN && b == -1 ? a : a / b); }

// The ONNX type code of Cast's `to` as a kiln type.
DType cast_target(const OpContext& ctx, std::int64_t to) {
  switch (to) {
    case 1:
    case 11: return DType::f32;  // float, double (held as f32)
    case 10: return DType::f16;
    case 16: return DType::bf16;
    case 9: return DType::bool_;
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 12:
    case 13: return DType::i64;
    default: ctx.unsupported("cast to ONNX type " + std::to_string(to));
  }
}

Value cast_value(const OpContext& ctx, const Value& x, DType to) {
  if (x.dtype() == to) return x;
  if (is_half(to) && !device_supports(ctx.device, to))
    ctx.unsupported(std::string(dtype_name(to)) + " on " + ctx.device.str());
  if (x.on_host()) return Value::of(host_cast(*x.host, to));
  return Value::of(cast(ctx.tensor(x), to));
}

// Sum, Mean, Max, Min over any number of broadcasting inputs.
void variadic(OpTable& t, const std::string& name, Tensor (*fn)(Tensor, Tensor), bool mean_of) {
  t[name] = [fn, mean_of](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(!in.empty(), "needs at least one input");
    Tensor acc = ctx.tensor(in[0]);
    for (std::size_t k = 1; k < in.size(); ++k) acc = fn(acc, ctx.tensor(in[k]));
    if (mean_of) acc = div(acc, double(in.size()));
    return std::vector<Value>{Value::of(acc)};
  };
}

}  // namespace

void add_elementwise_ops(OpTable& t) {
  simple_with_host(t, "Abs", abs, [](double v) { return std::fabs(v); });
  simple_with_host(t, "Neg", neg, [](double v) { return -v; });
  simple(t, "Exp", exp);
  simple(t, "Log", log);
  simple_with_host(t, "Sqrt", sqrt, [](double v) { return std::sqrt(v); });
  simple_with_host(t, "Reciprocal", reciprocal, [](double v) { return 1.0 / v; });
  simple(t, "Sin", sin);
  simple(t, "Cos", cos);
  simple(t, "Tan", tan);
  simple(t, "Tanh", tanh);
  simple(t, "Sigmoid", sigmoid);
  simple(t, "Erf", erf);
  simple(t, "Relu", relu);
  simple(t, "Floor", floor);
  simple(t, "Ceil", ceil);
  simple(t, "Round", round);
  simple(t, "Sign", sign);
  simple(t, "IsNaN", isnan);
  simple(t, "Not", logical_not);
  simple(t, "Softplus", softplus);
  unary(t, "Atan", [](const OpContext&, Tensor x) { return atan2(std::move(x), 1.0); });
  unary(t, "Asin", [](const OpContext&, Tensor x) { return atan2(x, sqrt(1.0 - square(x))); });
  unary(t, "Acos", [](const OpContext&, Tensor x) { return atan2(sqrt(1.0 - square(x)), x); });
  unary(t, "Sinh", [](const OpContext&, Tensor x) { return (exp(x) - exp(-x)) * 0.5; });
  unary(t, "Cosh", [](const OpContext&, Tensor x) { return (exp(x) + exp(-x)) * 0.5; });
  unary(t, "Asinh", [](const OpContext&, Tensor x) { return log(x + sqrt(square(x) + 1.0)); });
  unary(t, "Acosh", [](const OpContext&, Tensor x) { return log(x + sqrt(square(x) - 1.0)); });
  unary(t, "Atanh", [](const OpContext&, Tensor x) { return log((1.0 + x) / (1.0 - x)) * 0.5; });
  unary(t, "IsInf", [](const OpContext& ctx, Tensor x) {
    const bool neg_on = ctx.node.i("detect_negative", 1) != 0, pos_on = ctx.node.i("detect_positive", 1) != 0;
    Tensor inf = isinf(x);
    if (!neg_on) inf = logical_and(inf, gt(x, 0.0));
    if (!pos_on) inf = logical_and(inf, lt(x, 0.0));
    return inf;
  });
  unary(t, "Softsign", [](const OpContext&, Tensor x) { return x / (abs(x) + 1.0); });
  unary(t, "HardSigmoid", [](const OpContext& ctx, Tensor x) {
    return clamp(x * double(ctx.node.f("alpha", 0.2f)) + double(ctx.node.f("beta", 0.5f)), 0.0, 1.0);
  });
  unary(t, "HardSwish", [](const OpContext&, Tensor x) { return x * clamp(x / 6.0 + 0.5, 0.0, 1.0); });
  unary(t, "LeakyRelu", [](const OpContext& ctx, Tensor x) { return nn::leaky_relu(x, ctx.node.f("alpha", 0.01f)); });
  unary(t, "Elu", [](const OpContext& ctx, Tensor x) { return nn::elu(x, ctx.node.f("alpha", 1.0f)); });
  unary(t, "Selu", [](const OpContext& ctx, Tensor x) {
    const double alpha = ctx.node.f("alpha", 1.67326319217681884765625f);
    const double gamma = ctx.node.f("gamma", 1.05070102214813232421875f);
    return where(gt(x, 0.0), x * gamma, (exp(x) - 1.0) * (alpha * gamma));
  });
  unary(t, "Celu", [](const OpContext& ctx, Tensor x) {
    const double alpha = ctx.node.f("alpha", 1.0f);
    return relu(x) + clamp((exp(x / alpha) - 1.0) * alpha, std::nullopt, 0.0);
  });
  unary(t, "ThresholdedRelu",
        [](const OpContext& ctx, Tensor x) { return where(gt(x, double(ctx.node.f("alpha", 1.0f))), x, 0.0); });
  unary(t, "Identity", [](const OpContext&, Tensor x) { return x; });
  // Identity keeps host values on the host.
  t["Identity"] = [](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs one input");
    return std::vector<Value>{in[0]};
  };
  t["PRelu"] = [](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(in.size() == 2, "needs X and slope");
    const Tensor x = ctx.tensor(in[0]);
    return std::vector<Value>{Value::of(where(lt(x, 0.0), x * ctx.tensor(in[1]), x))};
  };

  const HostForm add_h{[](auto a, auto b) { return a + b; }, [](double a, double b) { return a + b; }};
  const HostForm sub_h{[](auto a, auto b) { return a - b; }, [](double a, double b) { return a - b; }};
  const HostForm mul_h{[](auto a, auto b) { return a * b; }, [](double a, double b) { return a * b; }};
  const HostForm div_h{trunc_div, [](double a, double b) { return a / b; }};
  binary(t, "Add", add_t, add_h, ScalarForm{add, add});
  binary(t, "Sub", sub_t, sub_h, ScalarForm{sub, sub});
  binary(t, "Mul", mul_t, mul_h, ScalarForm{mul, mul});
  binary(t, "Div", div_t, div_h, ScalarForm{div, div});
  binary(t, "Pow", pow_t);
  const OpFunction general_pow = t["Pow"];
  t["Pow"] = [general_pow](OpContext& ctx, const std::vector<Value>& in) {
    // A floating base on the device and one constant exponent of the same result shape.
    if (in.size() == 2 && in[0].defined() && !in[0].on_host() && is_floating(in[0].dtype()) && in[1].on_host() &&
        in[1].host->numel() == 1 && in[1].rank() <= in[0].rank()) {
      if (auto y = pow_by_constant(ctx.tensor(in[0]), in[1].host->at(0))) return std::vector<Value>{Value::of(*y)};
    }
    return general_pow(ctx, in);
  };
  binary(t, "Equal", eq_t,
         HostForm{[](auto a, auto b) -> std::int64_t { return a == b; },
                  [](double a, double b) -> double { return a == b; }, true});
  binary(t, "Less", lt_t,
         HostForm{[](auto a, auto b) -> std::int64_t { return a < b; },
                  [](double a, double b) -> double { return a < b; }, true});
  binary(t, "Greater", gt_t,
         HostForm{[](auto a, auto b) -> std::int64_t { return a > b; },
                  [](double a, double b) -> double { return a > b; }, true});
  binary(t, "LessOrEqual", le_t);
  binary(t, "GreaterOrEqual", ge_t);
  binary(t, "And", and_t);
  binary(t, "Or", or_t);
  binary(t, "Xor", xor_t);
  t["Mod"] = [](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(in.size() == 2 && in[0].defined() && in[1].defined(), "needs two inputs");
    const bool fmod = ctx.node.i("fmod", 0) != 0;
    if (all_on_host(in) && in[0].dtype() == in[1].dtype()) {
      // Shape arithmetic (PyTorch 2's attention export takes a dim's index modulo the rank
      // before a Slice of the Shape): on the host, as a device value would be read back there.
      const auto shape = broadcast_shapes(in[0].shape(), in[1].shape());
      ctx.check(shape.has_value(),
                "shapes " + shape_str(in[0].shape()) + " and " + shape_str(in[1].shape()) + " do not broadcast");
      if (shape_numel(*shape) <= kHostLimit) {
        if (in[1].host->is_integer())
          for (const std::int64_t d : in[1].host->ints) ctx.check(d != 0, "integer modulo by zero");
        const auto ints = [fmod](std::int64_t a, std::int64_t b) {
          const std::int64_t r = a % b;  // the dividend's sign (fmod)
          return !fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
        };
        const auto floats = [fmod](double a, double b) {
          const double r = std::fmod(a, b);
          return !fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
        };
        return std::vector<Value>{Value::of(host_binary(*in[0].host, *in[1].host, in[0].dtype(), ints, floats))};
      }
    }
    const Tensor a = ctx.tensor(in[0]), b = ctx.tensor(in[1]);
    if (!fmod) return std::vector<Value>{Value::of(remainder(a, b))};
    // fmod: the sign of the dividend, a - trunc(a / b) * b.
    const Tensor fa = cast(a, DType::f32), fb = cast(b, DType::f32);
    const Tensor q = fa / fb;
    const Tensor r = fa - sign(q) * floor(abs(q)) * fb;
    return std::vector<Value>{Value::of(is_floating(a.dtype()) ? cast(r, a.dtype()) : cast(round(r), a.dtype()))};
  };
  variadic(t, "Sum", add_t, false);
  variadic(t, "Mean", add_t, true);
  variadic(
      t, "Max", [](Tensor a, Tensor b) { return maximum(std::move(a), std::move(b)); }, false);
  variadic(
      t, "Min", [](Tensor a, Tensor b) { return minimum(std::move(a), std::move(b)); }, false);

  t["Where"] = [](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(in.size() == 3, "needs condition, X and Y");
    if (all_on_host(in) && in[1].host->numel() <= kHostLimit && in[2].host->numel() <= kHostLimit &&
        in[0].host->numel() <= kHostLimit) {
      // cond ? x : y on the host, broadcasting all three.
      const HostTensor& c = *in[0].host;
      const HostTensor xy = host_binary(
          *in[1].host, *in[2].host, in[1].dtype(), [](auto a, auto) { return a; }, [](double a, double) { return a; });
      const auto shape = broadcast_shapes(c.shape, xy.shape);
      ctx.check(shape.has_value(), "shapes do not broadcast");
      // Select through two broadcasts: pick x where c, else y.
      const HostTensor cx = host_binary(
          c, *in[1].host, in[1].dtype(), [](auto cv, auto xv) { return cv ? xv : 0; },
          [](double cv, double xv) { return cv != 0 ? xv : 0.0; });
      const HostTensor cy = host_binary(
          c, *in[2].host, in[1].dtype(), [](auto cv, auto yv) { return cv ? 0 : yv; },
          [](double cv, double yv) { return cv != 0 ? 0.0 : yv; });
      return std::vector<Value>{Value::of(host_binary(
          cx, cy, in[1].dtype(), [](auto a, auto b) { return a + b; }, [](double a, double b) { return a + b; }))};
    }
    Tensor cond = ctx.tensor(in[0]);
    if (cond.dtype() != DType::bool_) cond = cast(cond, DType::bool_);
    return std::vector<Value>{Value::of(where(cond, ctx.tensor(in[1]), ctx.tensor(in[2])))};
  };
  t["Clip"] = [](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(!in.empty(), "needs an input");
    std::optional<double> lo, hi;
    if (ctx.opset < 11) {
      if (ctx.node.has("min")) lo = ctx.node.f("min", 0);
      if (ctx.node.has("max")) hi = ctx.node.f("max", 0);
    } else {
      if (ctx.has_input(in, 1)) lo = ctx.doubles(in[1]).at(0);
      if (ctx.has_input(in, 2)) hi = ctx.doubles(in[2]).at(0);
    }
    Tensor x = ctx.tensor(in[0]);
    if (lo && hi && *lo > *hi) return std::vector<Value>{Value::of(full_like(x, *hi))};
    if (!lo && !hi) return std::vector<Value>{Value::of(x)};
    return std::vector<Value>{Value::of(clamp(x, lo, hi))};
  };
  t["Cast"] = [](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(!in.empty() && in[0].defined(), "needs one input");
    return std::vector<Value>{cast_value(ctx, in[0], cast_target(ctx, ctx.node.i("to", 1)))};
  };
  t["CastLike"] = [](OpContext& ctx, const std::vector<Value>& in) {
    ctx.check(in.size() == 2, "needs input and target_type");
    return std::vector<Value>{cast_value(ctx, in[0], in[1].dtype())};
  };
}

}  // namespace kiln::onnx::detail
