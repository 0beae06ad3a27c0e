// Export of the elementwise ops (unary, binary, ternary) and the reductions: one ONNX node each
// where ONNX has the op, else the few nodes kiln's own definition is made of (gelu is
// x/2 (1 + erf(x / sqrt 2)), as the CPU kernel computes it). Operands are cast to the op's
// compute dtype first (ops/elementwise_rules.h): ONNX does not promote.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>

#include "kiln/onnx/export_graph.h"
#include "kiln/ops/attrs_elementwise.h"
#include "kiln/ops/elementwise_rules.h"
#include "kiln/ops/registry.h"

namespace kiln::onnx::detail {

namespace {

using RecNode = RecordedGraph::Node;

OpIr as_op(const RecNode& n) {
  OpIr op;
  op.kind = n.kind;
  op.attrs = n.attrs;
  for (const RecordedGraph::Value& v : n.inputs) op.inputs.push_back(TensorIr{v.id, v.shape, v.dtype});
  return op;
}

// ONNX ops that are kiln's op as it is.
const std::map<OpKind, const char*>& direct_ops() {
  static const std::map<OpKind, const char*> ops = {
      {OpKind::neg, "Neg"},         {OpKind::abs, "Abs"},           {OpKind::exp, "Exp"},
      {OpKind::log, "Log"},         {OpKind::sqrt, "Sqrt"},         {OpKind::reciprocal, "Reciprocal"},
      {OpKind::sin, "Sin"},         {OpKind::cos, "Cos"},           {OpKind::tan, "Tan"},
      {OpKind::tanh, "Tanh"},       {OpKind::sigmoid, "Sigmoid"},   {OpKind::erf, "Erf"},
      {OpKind::relu, "Relu"},       {OpKind::softplus, "Softplus"}, {OpKind::floor, "Floor"},
      {OpKind::ceil, "Ceil"},       {OpKind::round, "Round"},       {OpKind::sign, "Sign"},
      {OpKind::isnan, "IsNaN"},     {OpKind::isinf, "IsInf"},       {OpKind::logical_not, "Not"},
      {OpKind::add, "Add"},         {OpKind::sub, "Sub"},           {OpKind::mul, "Mul"},
      {OpKind::div, "Div"},         {OpKind::pow, "Pow"},           {OpKind::maximum, "Max"},
      {OpKind::minimum, "Min"},     {OpKind::eq, "Equal"},          {OpKind::lt, "Less"},
      {OpKind::le, "LessOrEqual"},  {OpKind::gt, "Greater"},        {OpKind::ge, "GreaterOrEqual"},
      {OpKind::logical_and, "And"}, {OpKind::logical_or, "Or"},     {OpKind::logical_xor, "Xor"},
      {OpKind::where, "Where"},
  };
  return ops;
}

// The value operands of an elementwise op, cast to what its math runs in; a scalar operand
// (attrs.scalar_side) becomes a 0-d constant on its side.
std::vector<std::string> operands(ExportGraph& g, const RecNode& n, DType compute) {
  std::vector<std::string> xs;
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    xs.push_back(g.cast(g.name(n.inputs[i].id), n.inputs[i].dtype, elementwise_operand_dtype(n.kind, i, compute)));
  if (n.attrs.scalar_side == ScalarSide::Rhs) xs.push_back(g.scalar(n.attrs.scalar, compute));
  if (n.attrs.scalar_side == ScalarSide::Lhs) xs.insert(xs.begin(), g.scalar(n.attrs.scalar, compute));
  return xs;
}

// The composites: kiln ops ONNX 17 has no node for, written as kiln defines them.
bool composite(ExportGraph& g, const RecNode& n, const std::vector<std::string>& x, DType compute,
               const std::string& y) {
  const auto tmp = [&] { return g.fresh(n.name()); };
  const auto one = [&] { return g.scalar(1.0, compute); };
  switch (n.kind) {
    case OpKind::log1p: {
      const std::string s = tmp();
      g.node("Add", {x[0], one()}, {s});
      g.node("Log", {s}, {y});
      return true;
    }
    case OpKind::expm1: {
      const std::string e = tmp();
      g.node("Exp", {x[0]}, {e});
      g.node("Sub", {e, one()}, {y});
      return true;
    }
    case OpKind::rsqrt: {
      const std::string s = tmp();
      g.node("Sqrt", {x[0]}, {s});
      g.node("Reciprocal", {s}, {y});
      return true;
    }
    case OpKind::square: g.node("Mul", {x[0], x[0]}, {y}); return true;
    case OpKind::silu: {
      const std::string s = tmp();
      g.node("Sigmoid", {x[0]}, {s});
      g.node("Mul", {x[0], s}, {y});
      return true;
    }
    case OpKind::gelu: {  // opset 17 has no Gelu (it came in 20)
      const std::string scaled = tmp(), e = tmp(), e1 = tmp(), half = tmp();
      g.node("Mul", {x[0], g.scalar(M_SQRT1_2, compute)}, {scaled});
      g.node("Erf", {scaled}, {e});
      g.node("Add", {e, one()}, {e1});
      g.node("Mul", {x[0], g.scalar(0.5, compute)}, {half});
      g.node("Mul", {half, e1}, {y});
      return true;
    }
    case OpKind::ne: {
      const std::string e = tmp();
      g.node("Equal", {x[0], x[1]}, {e});
      g.node("Not", {e}, {y});
      return true;
    }
    case OpKind::remainder: {
      if (compute == DType::i64) {  // Python's sign rule: Mod with fmod = 0
        set_attr(g.node("Mod", x, {y}), "fmod", std::int64_t{0});
        return true;
      }
      // a - floor(a / b) * b, torch's definition for floats (ONNX Mod takes fmod = 1 for floats).
      const std::string q = tmp(), f = tmp(), p = tmp();
      g.node("Div", {x[0], x[1]}, {q});
      g.node("Floor", {q}, {f});
      g.node("Mul", {f, x[1]}, {p});
      g.node("Sub", {x[0], p}, {y});
      return true;
    }
    case OpKind::clamp: {
      const ClampAttrs c = ClampAttrs::decode(n.kind, n.attrs);
      g.node("Clip", {x[0], c.has_min ? g.scalar(c.min, compute) : "", c.has_max ? g.scalar(c.max, compute) : ""}, {y});
      return true;
    }
    default: return false;
  }
}

// A reduction's dims, non-negative, in order; all dims when empty.
std::vector<std::int64_t> reduced_dims(const RecNode& n) {
  const std::int64_t rank = n.inputs[0].shape.rank();
  std::vector<std::int64_t> dims;
  for (std::int64_t d : n.attrs.ints) dims.push_back(d < 0 ? d + rank : d);
  if (dims.empty())
    for (std::int64_t d = 0; d < rank; ++d) dims.push_back(d);
  return dims;
}

std::int64_t wrap_dim(std::int64_t d, std::int64_t rank) { return d < 0 ? d + rank : d; }

void check_not_batch(ExportGraph& g, const RecNode& n, bool touches_dim0, const char* what) {
  KILN_CHECK(!touches_dim0 || !g.batched(n.inputs[0].id), "onnx export",
             describe_node(n) + ": " + what + " the batch dim; export with a fixed batch (dynamic_batch = false)");
}

// ReduceX(x) over `dims` (opset 17: axes an attribute, except ReduceSum's input).
void reduce(ExportGraph& g, const std::string& op_type, const std::string& x, const std::vector<std::int64_t>& dims,
            bool keepdim, const std::string& y) {
  ::onnx::NodeProto& r = op_type == "ReduceSum" ? g.node(op_type, {x, g.ints(dims)}, {y}) : g.node(op_type, {x}, {y});
  if (op_type != "ReduceSum") set_attr(r, "axes", dims);
  set_attr(r, "keepdims", std::int64_t{keepdim ? 1 : 0});
}

}  // namespace

bool export_elementwise(ExportGraph& g, const RecNode& n) {
  if (!is_elementwise(n.kind)) return false;
  const OpIr op = as_op(n);
  const DType compute = elementwise_compute_dtype(op);
  const std::string y = g.name(n.outputs[0].id);
  if (n.kind == OpKind::cast) {
    set_attr(g.node("Cast", {g.name(n.inputs[0].id)}, {y}), "to",
             static_cast<std::int64_t>(onnx_elem_type(n.outputs[0].dtype)));
    return true;
  }
  if (n.kind == OpKind::atan2)
    throw Error("onnx export", describe_node(n) + ": op 'atan2' has no ONNX equivalent (opset 17)");
  const std::vector<std::string> x = operands(g, n, compute);
  const auto direct = direct_ops().find(n.kind);
  if (direct != direct_ops().end()) {
    g.node(direct->second, x, {y});
    return true;
  }
  if (composite(g, n, x, compute, y)) return true;
  throw Error("onnx export", describe_node(n) + ": op '" + n.name() + "' has no ONNX equivalent that export writes");
}

bool export_reduce(ExportGraph& g, const RecNode& n) {
  if (op_info(n.kind).family != OpFamily::reduce) return false;
  const std::string x = g.name(n.inputs[0].id), y = g.name(n.outputs[0].id);
  const std::int64_t rank = n.inputs[0].shape.rank();
  const auto axis_op = [&](const char* op_type) {
    const std::int64_t d = wrap_dim(n.attrs.dim, rank);
    check_not_batch(g, n, d == 0, "it runs along");
    set_attr(g.node(op_type, {x}, {y}), "axis", d);
  };
  switch (n.kind) {
    case OpKind::softmax: axis_op("Softmax"); return true;
    case OpKind::log_softmax: axis_op("LogSoftmax"); return true;
    case OpKind::cumsum: {
      const std::int64_t d = wrap_dim(n.attrs.dim, rank);
      check_not_batch(g, n, d == 0, "it runs along");
      g.node("CumSum", {x, g.scalar(static_cast<double>(d), DType::i64)}, {y});
      return true;
    }
    case OpKind::argmax:
    case OpKind::argmin: {
      const char* op_type = n.kind == OpKind::argmax ? "ArgMax" : "ArgMin";
      if (n.attrs.flag) {
        const std::int64_t d = wrap_dim(n.attrs.dim, rank);
        check_not_batch(g, n, d == 0, "it reduces");
        ::onnx::NodeProto& a = g.node(op_type, {x}, {y});
        set_attr(a, "axis", d);
        set_attr(a, "keepdims", std::int64_t{n.attrs.keepdim ? 1 : 0});
        return true;
      }
      // Over every element: of the flattened input, a 0-d index (keepdim: shaped as kiln's output).
      check_not_batch(g, n, true, "it reduces");
      const std::string flat = g.fresh("flat"), idx = g.fresh("index");
      g.node("Reshape", {x, g.ints({-1})}, {flat});
      ::onnx::NodeProto& a = g.node(op_type, {flat}, {idx});
      set_attr(a, "axis", std::int64_t{0});
      set_attr(a, "keepdims", std::int64_t{0});
      g.node("Reshape", {idx, g.ints(n.outputs[0].shape.to_vector())}, {y});
      return true;
    }
    default: break;
  }
  const std::vector<std::int64_t> dims = reduced_dims(n);
  bool dim0 = false;
  for (std::int64_t d : dims) dim0 = dim0 || d == 0;
  check_not_batch(g, n, dim0, "it reduces");
  const bool keep = n.attrs.keepdim;
  static const std::map<OpKind, const char*> reductions = {
      {OpKind::sum, "ReduceSum"}, {OpKind::mean, "ReduceMean"}, {OpKind::prod, "ReduceProd"},
      {OpKind::max, "ReduceMax"}, {OpKind::min, "ReduceMin"},   {OpKind::logsumexp, "ReduceLogSumExp"}};
  if (const auto it = reductions.find(n.kind); it != reductions.end()) {
    if (n.inputs[0].dtype == DType::bool_ || n.outputs[0].dtype != n.inputs[0].dtype) {
      // kiln sums bools and ints as i64 (torch's rule); ONNX reduces in the input's type.
      const std::string c = g.cast(x, n.inputs[0].dtype, n.outputs[0].dtype);
      reduce(g, it->second, c, dims, keep, y);
    } else {
      reduce(g, it->second, x, dims, keep, y);
    }
    return true;
  }
  if (n.kind == OpKind::var || n.kind == OpKind::std) {
    // sum((x - mean)^2) / (count - correction), kiln's (and torch's) definition.
    std::int64_t count = 1;
    for (std::int64_t d : dims) count *= n.inputs[0].shape[static_cast<int>(d)];
    const std::string m = g.fresh("mean"), c = g.fresh("centered"), ss = g.fresh("sumsq");
    reduce(g, "ReduceMean", x, dims, true, m);
    g.node("Sub", {x, m}, {c});
    reduce(g, "ReduceSumSquare", c, dims, keep, ss);
    const double denom = static_cast<double>(count) - n.attrs.scalar;
    if (n.kind == OpKind::var) {
      g.node("Div", {ss, g.scalar(denom, n.outputs[0].dtype)}, {y});
    } else {
      const std::string v = g.fresh("var");
      g.node("Div", {ss, g.scalar(denom, n.outputs[0].dtype)}, {v});
      g.node("Sqrt", {v}, {y});
    }
    return true;
  }
  throw Error("onnx export", describe_node(n) + ": op '" + n.name() + "' has no ONNX equivalent that export writes");
}

}  // namespace kiln::onnx::detail
