// Export of the ops that move or combine values rather than compute on each: layout (reshape,
// permute, slice...), indexing, matmul, the constants a pass makes (creation ops, uploads) and
// the windowed ops (convolution, pooling). Shape operands are i64 initializers; with a dynamic
// batch, a reshape keeps dim 0 as 0 (copy the input's) or -1 (whatever the batch makes it).
#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>

#include "kiln/onnx/export_graph.h"
#include "kiln/ops/attrs_creation.h"
#include "kiln/ops/attrs_index.h"
#include "kiln/ops/attrs_layout.h"
#include "kiln/ops/attrs_linalg.h"
#include "kiln/ops/attrs_window.h"
#include "kiln/ops/registry.h"

namespace kiln::onnx::detail {

namespace {

using RecNode = RecordedGraph::Node;

std::int64_t wrap(std::int64_t d, std::int64_t rank) { return d < 0 ? d + rank : d; }

void check_batch(ExportGraph& g, const RecNode& n, std::size_t input, bool touches_dim0, const std::string& what) {
  KILN_CHECK(!touches_dim0 || !g.batched(n.inputs[input].id), "onnx export",
             describe_node(n) + ": " + what + "; export with a fixed batch (dynamic_batch = false)");
}

std::string in(ExportGraph& g, const RecNode& n, std::size_t k) { return g.name(n.inputs[k].id); }
std::string out(ExportGraph& g, const RecNode& n, std::size_t k = 0) { return g.name(n.outputs[k].id); }

// A constant the pass computes from its attributes alone (full, arange, eye): its values, made
// here as the CPU kernel makes them (a double per index, then the output's dtype).
template <class F>
void host_constant(ExportGraph& g, const RecNode& n, F value_at) {
  const RecordedGraph::Value& o = n.outputs[0];
  const std::int64_t count = o.shape.numel();
  std::vector<std::byte> bytes(static_cast<std::size_t>(count) * dtype_size(o.dtype));
  for (std::int64_t i = 0; i < count; ++i) {
    const double v = value_at(i);
    std::byte* at = bytes.data() + static_cast<std::size_t>(i) * dtype_size(o.dtype);
    if (o.dtype == DType::f32) {
      const auto f = static_cast<float>(v);
      std::memcpy(at, &f, sizeof f);
    } else if (o.dtype == DType::i64) {
      const auto k = static_cast<std::int64_t>(v);
      std::memcpy(at, &k, sizeof k);
    } else if (o.dtype == DType::bool_) {
      *at = std::byte{v != 0.0 ? std::uint8_t{1} : std::uint8_t{0}};
    } else {
      throw Error("onnx export", describe_node(n) + ": constants of " + dtype_name(o.dtype) + " are not written");
    }
  }
  g.constant(out(g, n), o.dtype, o.shape, bytes.data(), bytes.size());
}

bool export_creation(ExportGraph& g, const RecNode& n) {
  switch (n.kind) {
    case OpKind::upload: {
      const RecordedGraph::Value& o = n.outputs[0];
      KILN_CHECK(n.host_data != nullptr || o.shape.numel() == 0, "onnx export",
                 describe_node(n) + ": the upload's bytes are not in the recording");
      g.constant(out(g, n), o.dtype, o.shape, n.host_data.get(),
                 static_cast<std::size_t>(o.shape.numel()) * dtype_size(o.dtype));
      return true;
    }
    case OpKind::full: {
      const double v = FullAttrs::decode(n.kind, n.attrs).value;
      host_constant(g, n, [v](std::int64_t) { return v; });
      return true;
    }
    case OpKind::arange: {
      const ArangeAttrs a = ArangeAttrs::decode(n.kind, n.attrs);
      host_constant(g, n, [a](std::int64_t i) { return a.start + static_cast<double>(i) * a.step; });
      return true;
    }
    case OpKind::eye: {
      const std::int64_t m = n.outputs[0].shape[1];
      host_constant(g, n, [m](std::int64_t i) { return i / m == i % m ? 1.0 : 0.0; });
      return true;
    }
    case OpKind::rand_uniform:
    case OpKind::rand_normal:
    case OpKind::rand_bernoulli:
      throw Error("onnx export", describe_node(n) + ": random op '" + n.name() +
                                     "' has no deterministic ONNX equivalent (dropout in training mode? call eval() "
                                     "before exporting)");
    default: return false;
  }
}

// x [.., m, k] with its last two dims swapped.
std::string transposed(ExportGraph& g, const std::string& x, std::int64_t rank) {
  std::vector<std::int64_t> perm;
  for (std::int64_t d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[rank - 1], perm[rank - 2]);
  const std::string y = g.fresh("transposed");
  set_attr(g.node("Transpose", {x}, {y}), "perm", perm);
  return y;
}

void export_matmul(ExportGraph& g, const RecNode& n) {
  const MatmulAttrs m = MatmulAttrs::decode(n.kind, n.attrs);
  const std::int64_t ra = n.inputs[0].shape.rank(), rb = n.inputs[1].shape.rank();
  check_batch(g, n, 0, ra <= 2 && m.transpose_a, "a transposed 2-d left operand moves the batch dim");
  check_batch(g, n, 1, rb <= 2, "the batch dim of a 2-d right operand is summed over");
  if (ra == 2 && rb == 2) {  // x Wᵀ, nn::Linear's product: Gemm reads the weight transposed itself
    ::onnx::NodeProto& gemm = g.node("Gemm", {in(g, n, 0), in(g, n, 1)}, {out(g, n)});
    if (m.transpose_a) set_attr(gemm, "transA", std::int64_t{1});
    if (m.transpose_b) set_attr(gemm, "transB", std::int64_t{1});
    return;
  }
  const std::string a = m.transpose_a ? transposed(g, in(g, n, 0), ra) : in(g, n, 0);
  const std::string b = m.transpose_b ? transposed(g, in(g, n, 1), rb) : in(g, n, 1);
  g.node("MatMul", {a, b}, {out(g, n)});
}

bool export_layout_op(ExportGraph& g, const RecNode& n) {
  const std::int64_t rank = n.inputs.empty() ? 0 : n.inputs[0].shape.rank();
  const bool batched = !n.inputs.empty() && g.batched(n.inputs[0].id);
  switch (n.kind) {
    case OpKind::reshape: {
      std::vector<std::int64_t> shape = n.outputs[0].shape.to_vector();
      if (batched) {
        check_batch(g, n, 0, shape.empty(), "a reshape to 0-d drops the batch dim");
        // Dim 0 keeps the batch: the input's own (0) or what the batch makes of it (-1, the other
        // dims being the batch's own).
        shape[0] = shape[0] == n.inputs[0].shape[0] ? 0 : -1;
      }
      g.node("Reshape", {in(g, n, 0), g.ints(shape)}, {out(g, n)});
      return true;
    }
    case OpKind::permute: {
      std::vector<std::int64_t> perm;
      for (std::int64_t d : n.attrs.ints) perm.push_back(wrap(d, rank));
      check_batch(g, n, 0, !perm.empty() && perm[0] != 0, "a permute that moves dim 0 moves the batch dim");
      set_attr(g.node("Transpose", {in(g, n, 0)}, {out(g, n)}), "perm", perm);
      return true;
    }
    case OpKind::expand: {
      std::vector<std::int64_t> shape = n.outputs[0].shape.to_vector();
      // Expand broadcasts both ways: a 1 keeps the input's dim, here the batch.
      if (batched && !shape.empty() && shape[0] == n.inputs[0].shape[0]) shape[0] = 1;
      g.node("Expand", {in(g, n, 0), g.ints(shape)}, {out(g, n)});
      return true;
    }
    case OpKind::slice: {
      const SliceAttrs s = SliceAttrs::decode(n.kind, n.attrs);
      std::vector<std::int64_t> starts, ends, axes, steps;
      for (int d = 0; d < s.rank; ++d) {
        const SliceRange& r = s.dims[static_cast<std::size_t>(d)];
        if (r.start == 0 && r.stop == n.inputs[0].shape[d] && r.step == 1) continue;
        check_batch(g, n, 0, d == 0, "slicing dim 0 cuts the batch dim");
        starts.push_back(r.start);
        ends.push_back(r.stop);
        axes.push_back(d);
        steps.push_back(r.step);
      }
      if (axes.empty())
        g.node("Identity", {in(g, n, 0)}, {out(g, n)});
      else
        g.node("Slice", {in(g, n, 0), g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps)}, {out(g, n)});
      return true;
    }
    case OpKind::flip: {
      std::vector<std::int64_t> axes, starts, ends, steps;
      for (std::int64_t d : n.attrs.ints) {
        axes.push_back(wrap(d, rank));
        check_batch(g, n, 0, axes.back() == 0, "flipping dim 0 reorders the batch");
        starts.push_back(-1);
        ends.push_back(std::numeric_limits<std::int64_t>::min());
        steps.push_back(-1);
      }
      g.node("Slice", {in(g, n, 0), g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps)}, {out(g, n)});
      return true;
    }
    case OpKind::cat: {
      const std::int64_t d = wrap(n.attrs.dim, rank);
      std::vector<std::string> xs;
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        check_batch(g, n, k, d == 0, "concatenating along dim 0 mixes the batch dim");
        xs.push_back(in(g, n, k));
      }
      set_attr(g.node("Concat", xs, {out(g, n)}), "axis", d);
      return true;
    }
    case OpKind::repeat: {
      const std::vector<std::int64_t>& repeats = n.attrs.ints;
      std::string x = in(g, n, 0);
      if (static_cast<std::int64_t>(repeats.size()) > rank) {  // torch's repeat adds leading dims
        check_batch(g, n, 0, true, "a repeat that adds leading dims moves the batch dim");
        std::vector<std::int64_t> shape(repeats.size() - static_cast<std::size_t>(rank), 1);
        for (std::int64_t v : n.inputs[0].shape) shape.push_back(v);
        const std::string r = g.fresh("unsqueezed");
        g.node("Reshape", {x, g.ints(shape)}, {r});
        x = r;
      }
      g.node("Tile", {x, g.ints(repeats)}, {out(g, n)});
      return true;
    }
    case OpKind::pad: {
      const PadAttrs p = PadAttrs::decode(n.kind, n.attrs);
      std::vector<std::int64_t> pads(static_cast<std::size_t>(2 * rank), 0);
      for (std::int64_t d = 0; d < rank; ++d) {
        pads[static_cast<std::size_t>(d)] = p.before_dim(static_cast<int>(d), static_cast<int>(rank));
        pads[static_cast<std::size_t>(rank + d)] = p.after_dim(static_cast<int>(d), static_cast<int>(rank));
      }
      check_batch(g, n, 0, pads[0] != 0 || pads[static_cast<std::size_t>(rank)] != 0,
                  "padding dim 0 changes the batch");
      g.node("Pad", {in(g, n, 0), g.ints(pads), g.scalar(p.value, n.inputs[0].dtype)}, {out(g, n)});
      return true;
    }
    case OpKind::tril:
    case OpKind::triu: {
      ::onnx::NodeProto& t =
          g.node("Trilu", {in(g, n, 0), g.scalar(static_cast<double>(n.attrs.dim), DType::i64)}, {out(g, n)});
      set_attr(t, "upper", std::int64_t{n.kind == OpKind::triu ? 1 : 0});
      return true;
    }
    default: return false;
  }
}

bool export_index_op(ExportGraph& g, const RecNode& n) {
  const std::int64_t rank = n.inputs.empty() ? 0 : n.inputs[0].shape.rank();
  const std::int64_t d = wrap(n.attrs.dim, rank);
  switch (n.kind) {
    case OpKind::index_select:
      check_batch(g, n, 0, d == 0, "selecting along dim 0 picks among the batch");
      set_attr(g.node("Gather", {in(g, n, 0), in(g, n, 1)}, {out(g, n)}), "axis", d);
      return true;
    case OpKind::gather:
      check_batch(g, n, 0, d == 0, "gathering along dim 0 picks among the batch");
      set_attr(g.node("GatherElements", {in(g, n, 0), in(g, n, 1)}, {out(g, n)}), "axis", d);
      return true;
    case OpKind::scatter:
    case OpKind::scatter_add: {
      check_batch(g, n, 0, d == 0, "scattering along dim 0 mixes the batch");
      ::onnx::NodeProto& s = g.node("ScatterElements", {in(g, n, 0), in(g, n, 1), in(g, n, 2)}, {out(g, n)});
      set_attr(s, "axis", d);
      if (n.kind == OpKind::scatter_add) set_attr(s, "reduction", std::string("add"));
      return true;
    }
    case OpKind::masked_fill:
      g.node("Where", {in(g, n, 1), g.scalar(n.attrs.scalar, n.inputs[0].dtype), in(g, n, 0)}, {out(g, n)});
      return true;
    case OpKind::one_hot: {
      const std::string values = g.fresh("one_hot_values");
      const std::int64_t v[] = {0, 1};
      g.constant(values, DType::i64, Shape{2}, v, sizeof v);
      const std::string oh = g.fresh("one_hot");
      g.node("OneHot", {in(g, n, 0), g.scalar(static_cast<double>(n.attrs.dim), DType::i64), values}, {oh});
      g.node("Identity", {g.cast(oh, DType::i64, n.outputs[0].dtype)}, {out(g, n)});
      return true;
    }
    case OpKind::sort:
    case OpKind::topk: {
      std::int64_t k = 0, axis = d;
      bool largest = n.attrs.flag;
      if (n.kind == OpKind::topk) {
        const TopkAttrs t = TopkAttrs::decode(n.kind, n.attrs);
        k = t.k;
        axis = wrap(t.dim, rank);
        largest = t.largest;
      } else {
        k = n.inputs[0].shape[static_cast<int>(axis)];
      }
      check_batch(g, n, 0, axis == 0, "sorting along dim 0 mixes the batch");
      ::onnx::NodeProto& t = g.node("TopK", {in(g, n, 0), g.ints({k})}, {out(g, n, 0), out(g, n, 1)});
      set_attr(t, "axis", axis);
      set_attr(t, "largest", std::int64_t{largest ? 1 : 0});
      set_attr(t, "sorted", std::int64_t{1});
      return true;
    }
    default: return false;
  }
}

std::vector<std::int64_t> spatial(const Spatial& v, int dims) { return {v.begin(), v.begin() + dims}; }
std::vector<std::int64_t> pads_of(const Spatial& p, int dims) {
  std::vector<std::int64_t> pads = spatial(p, dims);  // ONNX: every begin, then every end
  pads.insert(pads.end(), p.begin(), p.begin() + dims);
  return pads;
}

}  // namespace

bool export_layout(ExportGraph& g, const RecNode& n) {
  if (n.kind == OpKind::matmul) {
    export_matmul(g, n);
    return true;
  }
  return export_creation(g, n) || export_layout_op(g, n) || export_index_op(g, n);
}

bool export_window(ExportGraph& g, const RecNode& n, const std::set<EntityId>& used) {
  switch (n.kind) {
    case OpKind::conv: {
      const ConvAttrs c = ConvAttrs::decode(n.kind, n.attrs);
      std::vector<std::string> xs;
      for (std::size_t k = 0; k < n.inputs.size(); ++k) xs.push_back(in(g, n, k));
      check_batch(g, n, 1, true, "a batched weight");
      ::onnx::NodeProto& conv = g.node("Conv", xs, {out(g, n)});
      const Shape& w = n.inputs[1].shape;
      std::vector<std::int64_t> kernel;
      for (int s = 2; s < w.rank(); ++s) kernel.push_back(w[s]);
      set_attr(conv, "kernel_shape", kernel);
      set_attr(conv, "strides", spatial(c.stride, c.dims));
      set_attr(conv, "pads", pads_of(c.padding, c.dims));
      set_attr(conv, "dilations", spatial(c.dilation, c.dims));
      set_attr(conv, "group", c.groups);
      return true;
    }
    case OpKind::max_pool:
    case OpKind::avg_pool: {
      const PoolAttrs p = PoolAttrs::decode(n.kind, n.attrs);
      if (n.outputs.size() > 1)
        KILN_CHECK(used.count(n.outputs[1].id) == 0, "onnx export",
                   describe_node(n) + ": max pooling's indices (kiln's h * W + w) have no ONNX equivalent");
      const bool is_max = n.kind == OpKind::max_pool;
      ::onnx::NodeProto& pool = g.node(is_max ? "MaxPool" : "AveragePool", {in(g, n, 0)}, {out(g, n)});
      set_attr(pool, "kernel_shape", spatial(p.kernel, p.dims));
      set_attr(pool, "strides", spatial(p.stride, p.dims));
      set_attr(pool, "pads", pads_of(p.padding, p.dims));
      if (p.ceil_mode) set_attr(pool, "ceil_mode", std::int64_t{1});
      if (is_max)
        set_attr(pool, "dilations", spatial(p.dilation, p.dims));
      else
        set_attr(pool, "count_include_pad", std::int64_t{p.count_include_pad ? 1 : 0});
      return true;
    }
    case OpKind::batch_norm:
      throw Error("onnx export", describe_node(n) +
                                     ": batch_norm in training mode (batch statistics) is not exported; call eval() "
                                     "before exporting");
    default: return false;
  }
}

}  // namespace kiln::onnx::detail
