#include "kiln/ops/attrs_window.h"

#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// Appends the first `dims` values of each group.
void append_groups(std::vector<std::int64_t>& ints, int dims, std::initializer_list<const Spatial*> groups) {
  for (const Spatial* g : groups) ints.insert(ints.end(), g->begin(), g->begin() + dims);
}

// Reads `dims` values from `at` on into g; returns the position after them.
const std::int64_t* read_group(const std::int64_t* at, int dims, Spatial& g) {
  for (int d = 0; d < dims; ++d) g[static_cast<std::size_t>(d)] = at[d];
  return at + dims;
}

bool all_of(const Spatial& v, int dims, bool (*ok)(std::int64_t)) {
  for (int d = 0; d < dims; ++d)
    if (!ok(v[static_cast<std::size_t>(d)])) return false;
  return true;
}

bool positive(std::int64_t v) { return v > 0; }
bool non_negative(std::int64_t v) { return v >= 0; }

}  // namespace

std::string spatial_str(const Spatial& v, int dims) {
  std::string s = "[";
  for (int d = 0; d < dims; ++d) s += (d ? ", " : "") + std::to_string(v[static_cast<std::size_t>(d)]);
  return s + "]";
}

// ---- unfold, fold ----

OpAttrs WindowAttrs::encode(OpKind kind) const {
  OpAttrs a;
  a.ints.reserve(1 + 5 * static_cast<std::size_t>(dims));
  a.ints.push_back(dims);
  append_groups(a.ints, dims, {&kernel, &dilation, &padding, &stride});
  if (kind == OpKind::fold) append_groups(a.ints, dims, {&output_size});
  else a.scalar = pad_value;
  return a;
}

WindowAttrs WindowAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  const char* name = op_name(kind);
  const bool fold = kind == OpKind::fold;
  KILN_CHECK(kind == OpKind::unfold || fold, name, "internal error: not an unfold or fold op");
  const auto& ints = attrs.ints;
  KILN_CHECK(!ints.empty() && ints[0] >= 1 && ints[0] <= kMaxSpatialDims, name,
             "expected ints = [s, kernel[s], dilation[s], padding[s], stride[s]" +
                 std::string(fold ? ", output_size[s]" : "") + "] with s = 1 to 3 spatial dims");
  WindowAttrs w;
  w.dims = static_cast<int>(ints[0]);
  const std::size_t want = 1 + (fold ? 5 : 4) * static_cast<std::size_t>(w.dims);
  KILN_CHECK(ints.size() == want, name,
             "expected " + std::to_string(want) + " ints for " + std::to_string(w.dims) + " spatial dims, got " +
                 std::to_string(ints.size()));
  const std::int64_t* at = ints.data() + 1;
  for (Spatial* g : {&w.kernel, &w.dilation, &w.padding, &w.stride}) at = read_group(at, w.dims, *g);
  if (fold) read_group(at, w.dims, w.output_size);
  else w.pad_value = attrs.scalar;
  KILN_CHECK(all_of(w.kernel, w.dims, positive), name, "kernel sizes must be positive, got " + w.str());
  KILN_CHECK(all_of(w.dilation, w.dims, positive), name, "dilations must be positive, got " + w.str());
  KILN_CHECK(all_of(w.padding, w.dims, non_negative), name, "paddings must not be negative, got " + w.str());
  KILN_CHECK(all_of(w.stride, w.dims, positive), name, "strides must be positive, got " + w.str());
  return w;
}

std::string WindowAttrs::str() const {
  return "kernel " + spatial_str(kernel, dims) + ", dilation " + spatial_str(dilation, dims) + ", padding " +
         spatial_str(padding, dims) + ", stride " + spatial_str(stride, dims);
}

// ---- conv, conv_input_grad, conv_weight_grad ----

OpAttrs ConvAttrs::encode(OpKind kind) const {
  OpAttrs a;
  a.ints.reserve(2 + 4 * static_cast<std::size_t>(dims));
  a.ints.push_back(dims);
  append_groups(a.ints, dims, {&stride, &padding, &dilation});
  a.ints.push_back(groups);
  if (has_sizes(kind)) append_groups(a.ints, dims, {&sizes});
  return a;
}

ConvAttrs ConvAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  const char* name = op_name(kind);
  KILN_CHECK(kind == OpKind::conv || kind == OpKind::conv_input_grad || kind == OpKind::conv_weight_grad, name,
             "internal error: not a conv op");
  const bool sized = has_sizes(kind);
  const auto& ints = attrs.ints;
  // Built only on failure: a shape rule decodes every op submitted.
  const auto form = [&] {
    return "ints = [s, stride[s], padding[s], dilation[s], groups" +
           std::string(sized ? (kind == OpKind::conv_input_grad ? ", input_size[s]" : ", kernel[s]") : "") + "]";
  };
  KILN_CHECK(!ints.empty() && ints[0] >= 1 && ints[0] <= kMaxSpatialDims, name,
             "expected " + form() + " with s = 1 to 3 spatial dims, got " + std::to_string(ints.size()) + " ints");
  ConvAttrs a;
  a.dims = static_cast<int>(ints[0]);
  const std::size_t want = 2 + (sized ? 4 : 3) * static_cast<std::size_t>(a.dims);
  KILN_CHECK(ints.size() == want, name,
             "expected " + form() + " for s = " + std::to_string(a.dims) + " spatial dims (" + std::to_string(want) +
                 " ints), got " + std::to_string(ints.size()) + " ints");
  const std::int64_t* at = ints.data() + 1;
  for (Spatial* g : {&a.stride, &a.padding, &a.dilation}) at = read_group(at, a.dims, *g);
  a.groups = *at++;
  if (sized) read_group(at, a.dims, a.sizes);
  KILN_CHECK(all_of(a.stride, a.dims, positive) && all_of(a.dilation, a.dims, positive) &&
                 all_of(a.padding, a.dims, non_negative),
             name,
             "strides and dilations must be positive and paddings not negative, got stride " +
                 spatial_str(a.stride, a.dims) + ", padding " + spatial_str(a.padding, a.dims) + ", dilation " +
                 spatial_str(a.dilation, a.dims));
  KILN_CHECK(!sized || all_of(a.sizes, a.dims, positive), name,
             "sizes must be positive, got " + spatial_str(a.sizes, a.dims));
  KILN_CHECK(a.groups >= 1, name, "groups must be positive, got " + std::to_string(a.groups));
  return a;
}

WindowAttrs ConvAttrs::window(const std::int64_t* kernel) const {
  WindowAttrs w;
  w.dims = dims;
  for (int d = 0; d < dims; ++d) w.kernel[static_cast<std::size_t>(d)] = kernel[d];
  w.dilation = dilation;
  w.padding = padding;
  w.stride = stride;
  return w;
}

// ---- max_pool, avg_pool, max_pool_grad, avg_pool_grad ----

namespace {

bool is_pool(OpKind kind) {
  return kind == OpKind::max_pool || kind == OpKind::avg_pool || kind == OpKind::max_pool_grad ||
         kind == OpKind::avg_pool_grad;
}
bool is_avg(OpKind kind) { return kind == OpKind::avg_pool || kind == OpKind::avg_pool_grad; }

}  // namespace

OpAttrs PoolAttrs::encode(OpKind kind) const {
  OpAttrs a;
  a.ints.reserve(4 + 5 * static_cast<std::size_t>(dims));
  a.ints.push_back(dims);
  append_groups(a.ints, dims, {&kernel, &stride, &padding, &dilation});
  a.ints.push_back(ceil_mode);
  a.ints.push_back(count_include_pad);
  a.ints.push_back(with_indices);
  if (has_input_size(kind)) append_groups(a.ints, dims, {&input_size});
  return a;
}

PoolAttrs PoolAttrs::decode(OpKind kind, const OpAttrs& attrs) {
  const char* name = op_name(kind);
  KILN_CHECK(is_pool(kind), name, "internal error: not a pooling op");
  const bool sized = has_input_size(kind);
  const auto& ints = attrs.ints;
  // Built only on failure: a shape rule decodes every op submitted.
  const auto form = [&] {
    return "ints = [s, kernel[s], stride[s], padding[s], dilation[s], ceil_mode, count_include_pad, with_indices" +
           std::string(sized ? ", input_size[s]" : "") + "] with s = 1 or 2 spatial dims, got " +
           std::to_string(ints.size()) + " ints";
  };
  KILN_CHECK(!ints.empty() && ints[0] >= 1 && ints[0] <= kMaxPoolDims, name, "expected " + form());
  PoolAttrs a;
  a.dims = static_cast<int>(ints[0]);
  const std::size_t want = 4 + (sized ? 5 : 4) * static_cast<std::size_t>(a.dims);
  KILN_CHECK(ints.size() == want, name, "expected " + form());
  const std::int64_t* at = ints.data() + 1;
  for (Spatial* g : {&a.kernel, &a.stride, &a.padding, &a.dilation}) at = read_group(at, a.dims, *g);
  for (bool* flag : {&a.ceil_mode, &a.count_include_pad, &a.with_indices}) {
    KILN_CHECK(*at == 0 || *at == 1, name,
               "ceil_mode, count_include_pad and with_indices must be 0 or 1 (" + form() + ")");
    *flag = *at++ == 1;
  }
  if (sized) read_group(at, a.dims, a.input_size);
  KILN_CHECK(all_of(a.kernel, a.dims, positive) && all_of(a.stride, a.dims, positive) &&
                 all_of(a.dilation, a.dims, positive) && all_of(a.padding, a.dims, non_negative),
             name, "kernels, strides and dilations must be positive and paddings not negative, got " + a.str());
  for (int d = 0; d < a.dims; ++d)
    KILN_CHECK(2 * a.padding[d] <= a.kernel[d], name,
               "padding " + spatial_str(a.padding, a.dims) + " must be at most half the kernel " +
                   spatial_str(a.kernel, a.dims));
  if (is_avg(kind))
    for (int d = 0; d < a.dims; ++d)
      KILN_CHECK(a.dilation[d] == 1, name, "average pooling takes no dilation, got " + a.str());
  KILN_CHECK(!sized || all_of(a.input_size, a.dims, positive), name,
             "input sizes must be positive, got " + spatial_str(a.input_size, a.dims));
  return a;
}

std::int64_t PoolAttrs::output_size(int d, std::int64_t in) const {
  const std::int64_t k = kernel[d], s = stride[d], p = padding[d], dil = dilation[d];
  // The decoder bounds nothing above: a window this large fits no input anyway.
  if (k > (std::int64_t{1} << 40) || dil > (std::int64_t{1} << 20) || s > (std::int64_t{1} << 40) ||
      in > (std::int64_t{1} << 50))
    return 0;
  const std::int64_t span = dil * (k - 1) + 1;
  const std::int64_t reach = in + 2 * p - span + (ceil_mode ? s - 1 : 0);
  if (reach < 0) return 0;  // floor division of a negative: no window
  std::int64_t out = reach / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

std::string PoolAttrs::str() const {
  return "kernel " + spatial_str(kernel, dims) + ", stride " + spatial_str(stride, dims) + ", padding " +
         spatial_str(padding, dims) + ", dilation " + spatial_str(dilation, dims) + (ceil_mode ? ", ceil_mode" : "");
}

}  // namespace kiln
