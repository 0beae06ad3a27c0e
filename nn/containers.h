// Containers of modules, named as PyTorch names them: Sequential and ModuleList by position
// ("layers.0.weight"), ModuleDict by key ("heads.cls.weight").
//
//   nn::Sequential net(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 10));
//   nn::ModuleList<nn::TransformerEncoderLayer> layers;   // one module type, indexed
//   nn::ModuleDict<nn::Linear> heads;                     // one module type, by key
#pragma once
#include <stdexcept>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Modules applied one after the other, each `Tensor forward(const Tensor&) const` or
// `Tensor forward(Tensor) const`. Each layer's input is handed over to it, so a layer that takes
// it by value (Linear, the activations) lets its op consume it: no value kept past its last use.
class Sequential : public Module {
 public:
  Sequential() = default;
  template <class... M>
    requires(sizeof...(M) > 0 && (std::derived_from<std::decay_t<M>, Module> && ...) &&
             !(sizeof...(M) == 1 && (std::is_same_v<std::decay_t<M>, Sequential> && ...)))
  explicit Sequential(M&&... modules) {
    (push_back(std::forward<M>(modules)), ...);
  }
  Sequential(const Sequential& other) : Module(other) {
    for (const Entry& e : other.entries_) entries_.push_back({e.module->copy_module(), e.call});
  }
  // Moves hand the layers over (an optimizer step on `std::move(model)` may then update the
  // parameters in their own buffers); copies share the tensors.
  Sequential(Sequential&& other) noexcept : Module(other), entries_(std::move(other.entries_)) {}
  Sequential& operator=(Sequential&& other) noexcept {
    if (this != &other) {
      Module::operator=(other);
      entries_ = std::move(other.entries_);
      name_children();
    }
    return *this;
  }
  Sequential& operator=(const Sequential& other) {
    if (this != &other) {
      Module::operator=(other);
      entries_.clear();
      for (const Entry& e : other.entries_) entries_.push_back({e.module->copy_module(), e.call});
      name_children();
    }
    return *this;
  }

  template <class M>
    requires std::derived_from<std::decay_t<M>, Module>
  void push_back(M&& module) {
    using T = std::decay_t<M>;
    entries_.push_back({std::make_unique<T>(std::forward<M>(module)),
                        [](const Module& m, Tensor&& x) { return static_cast<const T&>(m).forward(std::move(x)); }});
    name_children();
  }

  std::size_t size() const { return entries_.size(); }
  Module& operator[](std::size_t i) { return *entries_.at(i).module; }
  const Module& operator[](std::size_t i) const { return *entries_.at(i).module; }
  // The module at i as its own type (kiln::Error when it is another type).
  template <class M> const M& get(std::size_t i) const;

  Tensor forward(const Tensor& x) const {
    Tensor y = x;
    for (const Entry& e : entries_) y = e.call(*e.module, std::move(y));
    return y;
  }

  void visit_fields(FieldVisitor& v) override {
    for (std::size_t i = 0; i < entries_.size(); ++i) v.field(std::to_string(i), *entries_[i].module);
  }
  std::string describe() const override { return std::to_string(entries_.size()) + " modules"; }
  KILN_MODULE_COMMON(Sequential)

 private:
  struct Entry {
    std::unique_ptr<Module> module;
    Tensor (*call)(const Module&, Tensor&&);
  };
  std::vector<Entry> entries_;
};

template <class M> const M& Sequential::get(std::size_t i) const {
  KILN_CHECK(i < entries_.size(), "Sequential", "index " + std::to_string(i) + " out of " + std::to_string(size()));
  const auto* m = dynamic_cast<const M*>(entries_[i].module.get());
  KILN_CHECK(m != nullptr, "Sequential",
             "module " + std::to_string(i) + " is a " + entries_[i].module->type_name() + ", not the type asked for");
  return *m;
}

// Modules of one type, indexed like a vector.
template <class M> class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<M> modules) : items_(std::move(modules)) { name_children(); }
  ModuleList(const ModuleList&) = default;
  ModuleList& operator=(const ModuleList& other) {
    Module::operator=(other);
    items_ = other.items_;
    name_children();
    return *this;
  }
  ModuleList(ModuleList&& other) noexcept : Module(other), items_(std::move(other.items_)) {}
  ModuleList& operator=(ModuleList&& other) noexcept {
    Module::operator=(other);
    items_ = std::move(other.items_);
    name_children();
    return *this;
  }

  void push_back(M module) {
    items_.push_back(std::move(module));
    name_children();
  }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  M& operator[](std::size_t i) { return items_.at(i); }
  const M& operator[](std::size_t i) const { return items_.at(i); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  void visit_fields(FieldVisitor& v) override {
    for (std::size_t i = 0; i < items_.size(); ++i) v.field(std::to_string(i), items_[i]);
  }
  std::string describe() const override { return std::to_string(items_.size()) + " modules"; }
  KILN_MODULE_COMMON(ModuleList)

 private:
  std::vector<M> items_;
};

// Modules of one type by key, in insertion order.
template <class M> class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  ModuleDict(const ModuleDict&) = default;
  ModuleDict& operator=(const ModuleDict& other) {
    Module::operator=(other);
    items_ = other.items_;
    name_children();
    return *this;
  }
  ModuleDict(ModuleDict&& other) noexcept : Module(other), items_(std::move(other.items_)) {}
  ModuleDict& operator=(ModuleDict&& other) noexcept {
    Module::operator=(other);
    items_ = std::move(other.items_);
    name_children();
    return *this;
  }

  // Adds or replaces the module under `key`.
  void insert(const std::string& key, M module) {
    KILN_CHECK(!key.empty() && key.find('.') == std::string::npos, "ModuleDict",
               "a key must be non-empty and have no '.', got '" + key + "'");
    for (auto& [k, m] : items_)
      if (k == key) {
        m = std::move(module);
        name_children();
        return;
      }
    items_.emplace_back(key, std::move(module));
    name_children();
  }
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  const M& at(const std::string& key) const {
    const M* m = find(key);
    KILN_CHECK(m != nullptr, where(), "no module under the key '" + key + "'");
    return *m;
  }
  std::size_t size() const { return items_.size(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  void visit_fields(FieldVisitor& v) override {
    for (auto& [k, m] : items_) v.field(k, m);
  }
  std::string describe() const override { return std::to_string(items_.size()) + " modules"; }
  KILN_MODULE_COMMON(ModuleDict)

 private:
  const M* find(const std::string& key) const {
    for (const auto& [k, m] : items_)
      if (k == key) return &m;
    return nullptr;
  }
  std::vector<std::pair<std::string, M>> items_;
};

}  // namespace kiln::nn
