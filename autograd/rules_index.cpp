#include "autograd/rules.h"

namespace kiln::autograd {
void register_index_rules(RuleTable&) {}
}  // namespace kiln::autograd
