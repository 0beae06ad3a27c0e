#include "autograd/rules.h"

namespace kiln::autograd {
void register_layout_rules(RuleTable&) {}
}  // namespace kiln::autograd
