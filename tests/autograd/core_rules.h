// A few backward rules written for the autograd core's own tests (add, sub, mul, matmul, relu,
// exp, sigmoid, sum, mean, reshape, permute), so that the core is tested independently of the
// rule families in autograd/rules_<family>.cpp. CoreRules installs them for a test's duration.
#pragma once
#include "kiln/autograd/graph.h"

namespace kiln::test {

const autograd::RuleTable& core_rules();

class CoreRules {
 public:
  CoreRules() { detail::set_rules_for_testing(&core_rules()); }
  ~CoreRules() { detail::set_rules_for_testing(nullptr); }
  CoreRules(const CoreRules&) = delete;
  CoreRules& operator=(const CoreRules&) = delete;
};

}  // namespace kiln::test
