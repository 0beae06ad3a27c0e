#include "engine/linalg.h"

#include "engine/submit.h"

namespace kiln {

Tensor matmul(Tensor a, Tensor b) { return detail::submit2(OpKind::matmul, std::move(a), std::move(b)); }

}  // namespace kiln
