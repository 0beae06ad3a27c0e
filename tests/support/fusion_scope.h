// Fusion on or off for a block, restoring the setting afterwards. The device is synced at both
// ends, so that ops submitted before the block are planned with the old setting and the block's
// own ops with the new one.
#pragma once
#include "kiln/engine/kiln.h"

namespace kiln::test {

class FusionScope {
 public:
  explicit FusionScope(bool on, Device device = Device::cpu()) : device_(device), was_(fusion_enabled()) {
    device_.sync().get();
    set_fusion(on);
  }
  ~FusionScope() {
    device_.sync().get();
    set_fusion(was_);
  }
  FusionScope(const FusionScope&) = delete;
  FusionScope& operator=(const FusionScope&) = delete;

 private:
  Device device_;
  bool was_;
};

}  // namespace kiln::test
