#include "kiln/io/module_fields.h"

namespace kiln::io::detail {

std::vector<ModuleSlot> module_slots(nn::Module& m) {
  struct Collect final : nn::FieldVisitor {
    std::vector<ModuleSlot> slots;
    void parameter(const std::string& path, nn::Parameter& p) override {
      if (p.defined()) slots.push_back({path, &p, nullptr, p.value()});
    }
    void buffer(const std::string& path, nn::Buffer& b) override {
      if (b.defined()) slots.push_back({path, nullptr, &b, b.get()});
    }
  } collect;
  m.visit(collect);
  return std::move(collect.slots);
}

}  // namespace kiln::io::detail
