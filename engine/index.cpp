#include "kiln/engine/index.h"

#include "kiln/engine/submit.h"
#include "kiln/ops/attrs_index.h"

namespace kiln {

namespace {

OpAttrs dim_attrs(std::int64_t dim) {
  OpAttrs a;
  a.dim = dim;
  return a;
}

std::pair<Tensor, Tensor> submit_pair(OpKind kind, Tensor x, OpAttrs attrs) {
  std::vector<Tensor> outs = detail::submit(kind, &x, 1, std::move(attrs), Device::cpu());
  return {std::move(outs[0]), std::move(outs[1])};
}

}  // namespace

Tensor gather(Tensor x, std::int64_t dim, Tensor index) {
  return detail::submit2(OpKind::gather, std::move(x), std::move(index), dim_attrs(dim));
}

Tensor scatter(Tensor x, std::int64_t dim, Tensor index, Tensor src) {
  return detail::submit3(OpKind::scatter, std::move(x), std::move(index), std::move(src), dim_attrs(dim));
}

Tensor scatter_add(Tensor x, std::int64_t dim, Tensor index, Tensor src) {
  return detail::submit3(OpKind::scatter_add, std::move(x), std::move(index), std::move(src), dim_attrs(dim));
}

Tensor index_select(Tensor x, std::int64_t dim, Tensor index) {
  return detail::submit2(OpKind::index_select, std::move(x), std::move(index), dim_attrs(dim));
}

Tensor masked_fill(Tensor x, Tensor mask, double value) {
  OpAttrs a;
  a.scalar = value;
  return detail::submit2(OpKind::masked_fill, std::move(x), std::move(mask), std::move(a));
}

Tensor one_hot(Tensor indices, std::int64_t num_classes) {
  return detail::submit1(OpKind::one_hot, std::move(indices), dim_attrs(num_classes));
}

std::pair<Tensor, Tensor> sort(Tensor x, std::int64_t dim, bool descending) {
  OpAttrs a = dim_attrs(dim);
  a.flag = descending;
  return submit_pair(OpKind::sort, std::move(x), std::move(a));
}

std::pair<Tensor, Tensor> topk(Tensor x, std::int64_t k, std::int64_t dim, bool largest) {
  return submit_pair(OpKind::topk, std::move(x), TopkAttrs{.k = k, .dim = dim, .largest = largest}.encode());
}

}  // namespace kiln
