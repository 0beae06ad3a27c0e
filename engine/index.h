// Indexing ops. Index tensors are i64; an index out of range is reported through the future of
// the result (the values are only known on the device), naming the op and the bad index.
#pragma once
#include <cstdint>
#include <utility>

#include "kiln/engine/tensor.h"

namespace kiln {

Tensor gather(Tensor x, std::int64_t dim, Tensor index);
Tensor scatter(Tensor x, std::int64_t dim, Tensor index, Tensor src);
Tensor scatter_add(Tensor x, std::int64_t dim, Tensor index, Tensor src);
Tensor index_select(Tensor x, std::int64_t dim, Tensor index);
Tensor masked_fill(Tensor x, Tensor mask, double value);
Tensor one_hot(Tensor indices, std::int64_t num_classes);  // i64, like torch
// (values, indices); stable.
std::pair<Tensor, Tensor> sort(Tensor x, std::int64_t dim = -1, bool descending = false);
std::pair<Tensor, Tensor> topk(Tensor x, std::int64_t k, std::int64_t dim = -1, bool largest = true);

}  // namespace kiln
