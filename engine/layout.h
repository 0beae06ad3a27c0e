// Layout ops. reshape and the ops built on it (flatten, squeeze, unsqueeze) share their input's
// buffer; the others produce a new contiguous tensor. Composite ops (transpose, narrow, stack,
// split, chunk) are written in terms of the primitives.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/engine/tensor.h"

namespace kiln {

Tensor reshape(Tensor x, const std::vector<std::int64_t>& shape);  // one dim may be -1
Tensor flatten(Tensor x, std::int64_t start_dim = 0, std::int64_t end_dim = -1);
Tensor squeeze(Tensor x);
Tensor squeeze(Tensor x, std::int64_t dim);
Tensor unsqueeze(Tensor x, std::int64_t dim);
Tensor permute(Tensor x, const std::vector<std::int64_t>& dims);
Tensor transpose(Tensor x, std::int64_t dim0, std::int64_t dim1);
Tensor expand(Tensor x, const std::vector<std::int64_t>& shape);  // -1 keeps a dim
// Elements start, start+step, ... below end along dim; negative start/end count from the end
// and are clamped like Python slices; step > 0.
Tensor slice(Tensor x, std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1);
Tensor narrow(Tensor x, std::int64_t dim, std::int64_t start, std::int64_t length);
Tensor cat(const std::vector<Tensor>& xs, std::int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& xs, std::int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim = 0);
Tensor flip(Tensor x, const std::vector<std::int64_t>& dims);
Tensor repeat(Tensor x, const std::vector<std::int64_t>& repeats);
// pads = (before, after) pairs starting from the last dim, like torch.nn.functional.pad.
Tensor pad(Tensor x, const std::vector<std::int64_t>& pads, double value = 0.0);
Tensor tril(Tensor x, std::int64_t diagonal = 0);
Tensor triu(Tensor x, std::int64_t diagonal = 0);

}  // namespace kiln
