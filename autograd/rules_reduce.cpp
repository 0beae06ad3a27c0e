#include "autograd/rules.h"

namespace kiln::autograd {
void register_reduce_rules(RuleTable&) {}
}  // namespace kiln::autograd
