// The reduce family's API: normalizes dims here, on the caller's thread, so that the message
// carries the canonical form the kernels expect (ops/reduce_rules.h).
#include "kiln/engine/reduce.h"

#include "kiln/engine/submit.h"
#include "kiln/ops/reduce_rules.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

TensorIr meta_of(const Tensor& x, const char* op) {
  KILN_CHECK(x.defined(), op, "the input is an undefined tensor");
  return TensorIr{x.id(), x.shape(), x.dtype(), TensorStatus::ReadOnly};
}

Tensor reduce_dims(OpKind kind, Tensor x, const Dims& dims, bool keepdim, double scalar = 0.0) {
  const char* name = op_name(kind);
  OpAttrs a;
  a.ints = normalize_reduce_dims(name, dims, meta_of(x, name));
  a.keepdim = keepdim;
  a.scalar = scalar;
  return detail::submit1(kind, std::move(x), std::move(a));
}

Tensor along_dim(OpKind kind, Tensor x, std::int64_t dim, bool keepdim = false) {
  const char* name = op_name(kind);
  OpAttrs a;
  a.dim = normalize_reduce_dim(name, dim, meta_of(x, name));
  a.keepdim = keepdim;
  a.flag = true;
  return detail::submit1(kind, std::move(x), std::move(a));
}

Tensor flattened(OpKind kind, Tensor x) {
  OpAttrs a;
  a.flag = false;
  return detail::submit1(kind, std::move(x), std::move(a));
}

}  // namespace

Tensor sum(Tensor x, const Dims& dims, bool keepdim) { return reduce_dims(OpKind::sum, std::move(x), dims, keepdim); }
Tensor mean(Tensor x, const Dims& dims, bool keepdim) { return reduce_dims(OpKind::mean, std::move(x), dims, keepdim); }
Tensor prod(Tensor x, const Dims& dims, bool keepdim) { return reduce_dims(OpKind::prod, std::move(x), dims, keepdim); }
Tensor max(Tensor x, const Dims& dims, bool keepdim) { return reduce_dims(OpKind::max, std::move(x), dims, keepdim); }
Tensor min(Tensor x, const Dims& dims, bool keepdim) { return reduce_dims(OpKind::min, std::move(x), dims, keepdim); }

Tensor argmax(Tensor x) { return flattened(OpKind::argmax, std::move(x)); }
Tensor argmax(Tensor x, std::int64_t dim, bool keepdim) {
  return along_dim(OpKind::argmax, std::move(x), dim, keepdim);
}
Tensor argmin(Tensor x) { return flattened(OpKind::argmin, std::move(x)); }
Tensor argmin(Tensor x, std::int64_t dim, bool keepdim) {
  return along_dim(OpKind::argmin, std::move(x), dim, keepdim);
}

Tensor var(Tensor x, const Dims& dims, double correction, bool keepdim) {
  return reduce_dims(OpKind::var, std::move(x), dims, keepdim, correction);
}
Tensor std(Tensor x, const Dims& dims, double correction, bool keepdim) {
  return reduce_dims(OpKind::std, std::move(x), dims, keepdim, correction);
}
Tensor any(Tensor x, const Dims& dims, bool keepdim) { return reduce_dims(OpKind::any, std::move(x), dims, keepdim); }
Tensor all(Tensor x, const Dims& dims, bool keepdim) { return reduce_dims(OpKind::all, std::move(x), dims, keepdim); }
Tensor logsumexp(Tensor x, const Dims& dims, bool keepdim) {
  return reduce_dims(OpKind::logsumexp, std::move(x), dims, keepdim);
}

Tensor cumsum(Tensor x, std::int64_t dim) { return along_dim(OpKind::cumsum, std::move(x), dim); }
Tensor softmax(Tensor x, std::int64_t dim) { return along_dim(OpKind::softmax, std::move(x), dim); }
Tensor log_softmax(Tensor x, std::int64_t dim) { return along_dim(OpKind::log_softmax, std::move(x), dim); }

}  // namespace kiln
