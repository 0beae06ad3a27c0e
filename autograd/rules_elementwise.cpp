#include "autograd/rules.h"

namespace kiln::autograd {
void register_elementwise_rules(RuleTable&) {}
}  // namespace kiln::autograd
