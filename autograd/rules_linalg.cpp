#include "autograd/rules.h"

namespace kiln::autograd {
void register_linalg_rules(RuleTable&) {}
}  // namespace kiln::autograd
