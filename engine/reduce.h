// Reductions over all dims or the given dims (keepdim keeps them as size 1), scans, softmax.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln {

using Dims = std::vector<std::int64_t>;

Tensor sum(Tensor x, const Dims& dims = {}, bool keepdim = false);
Tensor mean(Tensor x, const Dims& dims = {}, bool keepdim = false);
Tensor prod(Tensor x, const Dims& dims = {}, bool keepdim = false);
Tensor max(Tensor x, const Dims& dims = {}, bool keepdim = false);
Tensor min(Tensor x, const Dims& dims = {}, bool keepdim = false);
// Index of the first maximum over the flattened tensor (i64, 0-d), or along `dim`.
Tensor argmax(Tensor x);
Tensor argmax(Tensor x, std::int64_t dim, bool keepdim = false);
Tensor argmin(Tensor x);
Tensor argmin(Tensor x, std::int64_t dim, bool keepdim = false);
// correction = 1 is the unbiased estimator (torch's default).
Tensor var(Tensor x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std(Tensor x, const Dims& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor any(Tensor x, const Dims& dims = {}, bool keepdim = false);
Tensor all(Tensor x, const Dims& dims = {}, bool keepdim = false);
Tensor logsumexp(Tensor x, const Dims& dims, bool keepdim = false);
Tensor cumsum(Tensor x, std::int64_t dim);
Tensor softmax(Tensor x, std::int64_t dim);
Tensor log_softmax(Tensor x, std::int64_t dim);

}  // namespace kiln
