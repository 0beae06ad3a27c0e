// The tree operations every module shares, each one walk over the fields (nn/module.h).
#include "kiln/nn/module.h"

#include <cstdio>
#include <sstream>

namespace kiln::nn {

void FieldVisitor::field(const std::string& name, Module& m) {
  const std::string path = prefix_ + name;
  if (!enter(path, m)) return;
  const std::string saved = prefix_;
  prefix_ = path + ".";
  m.visit_fields(*this);
  prefix_ = saved;
  leave(path, m);
}

namespace {

// A visitor from two lambdas, for the walks below that need no state of their own.
template <class OnParam, class OnBuffer> class Walk final : public FieldVisitor {
 public:
  Walk(OnParam p, OnBuffer b) : on_param_(std::move(p)), on_buffer_(std::move(b)) {}
  void parameter(const std::string& path, Parameter& p) override { on_param_(path, p); }
  void buffer(const std::string& path, Buffer& b) override { on_buffer_(path, b); }

 private:
  OnParam on_param_;
  OnBuffer on_buffer_;
};

template <class P, class B> void walk(const Module& m, P p, B b) {
  Walk<P, B> w(std::move(p), std::move(b));
  m.visit(w);
}

void no_buffer(const std::string&, Buffer&) {}
void no_param(const std::string&, Parameter&) {}

std::string with_commas(std::int64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

}  // namespace

void Module::train(bool on) {
  struct Modes final : FieldVisitor {
    bool on;
    bool enter(const std::string&, Module& m) override {
      m.training_ = on;
      return true;
    }
  } v;
  v.on = on;
  training_ = on;
  visit(v);
}

std::vector<NamedTensor> Module::named_parameters(bool trainable_only) const {
  std::vector<NamedTensor> out;
  walk(
      *this,
      [&](const std::string& path, Parameter& p) {
        if (p.defined() && (!trainable_only || p.trainable())) out.push_back({path, p.value()});
      },
      no_buffer);
  return out;
}

std::vector<Tensor> Module::parameters(bool trainable_only) const {
  std::vector<Tensor> out;
  for (NamedTensor& n : named_parameters(trainable_only)) out.push_back(std::move(n.tensor));
  return out;
}

std::vector<NamedTensor> Module::named_buffers() const {
  std::vector<NamedTensor> out;
  walk(
      *this, no_param, [&](const std::string& path, Buffer& b) {
        if (b.defined()) out.push_back({path, b.get()});
      });
  return out;
}

std::vector<NamedTensor> Module::state_dict() const {
  std::vector<NamedTensor> out;
  walk(
      *this,
      [&](const std::string& path, Parameter& p) {
        if (p.defined()) out.push_back({path, p.value()});
      },
      [&](const std::string& path, Buffer& b) {
        if (b.defined()) out.push_back({path, b.get()});
      });
  return out;
}

std::int64_t Module::parameter_count(bool trainable_only) const {
  std::int64_t n = 0;
  for (const NamedTensor& p : named_parameters(trainable_only)) n += p.tensor.numel();
  return n;
}

void Module::set_trainable(bool on) {
  walk(
      *this, [on](const std::string&, Parameter& p) { p.set_trainable(on); }, no_buffer);
}

void Module::map_parameters_in_place(const TensorMap& fn) {
  walk(
      *this,
      [&](const std::string& path, Parameter& p) {
        if (!p.defined()) return;
        Tensor next = fn(path, p.value());
        KILN_CHECK(next.defined() && next.shape() == p.shape(), "map_parameters",
                   path + ": the new value must keep the shape " + p.shape().str() + ", got " +
                       (next.defined() ? next.shape().str() : std::string("an undefined tensor")));
        p.set(next);
      },
      no_buffer);
}

void Module::map_buffers_in_place(const TensorMap& fn) {
  walk(
      *this, no_param, [&](const std::string& path, Buffer& b) {
        if (b.defined()) b.unshare(fn(path, b.get()));
      });
}

void Module::move_to_in_place(Device device) {
  walk(
      *this,
      [&](const std::string&, Parameter& p) {
        if (p.defined()) p.set(kiln::to(detach(p.value()), device));
      },
      [&](const std::string&, Buffer& b) {
        if (b.defined()) b.unshare(kiln::to(b.get(), device));
      });
}

void Module::deep_copy_in_place() {
  // A copy on the same device: kiln::to would hand back the same entity, so copy by value.
  const auto copy = [](const Tensor& t) {
    NoGradGuard no_grad;
    return t.numel() == 0 ? t : clone(detach(t));
  };
  walk(
      *this,
      [&](const std::string&, Parameter& p) {
        if (p.defined()) p.set(copy(p.value()));
      },
      [&](const std::string&, Buffer& b) {
        if (b.defined()) b.unshare(copy(b.get()));
      });
}

std::string format_setting(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string Module::where() const {
  return (path_.empty() ? std::string("<model>") : path_) + " (" + type_name() + ")";
}

void rethrow_with_context(const Module& m, const Error& e) {
  const std::string w = m.where();
  const std::string what = e.what();
  // Nested layers each add their place; the innermost one names it best.
  if (what.find(w) != std::string::npos) throw e;
  throw Error(w, what);
}

void Module::name_children() {
  struct Namer final : FieldVisitor {
    const std::string* root;
    bool enter(const std::string& path, Module& m) override {
      m.path_ = root->empty() ? path : *root + "." + path;
      return true;
    }
  } v;
  v.root = &path_;
  visit_fields(v);
}

namespace {
// fn(path, counter) for the root and every sub-module that draws random numbers.
template <class Fn> void for_random_draws(Module& model, Fn&& fn) {
  struct Finder final : FieldVisitor {
    Fn* fn;
    bool enter(const std::string& path, Module& m) override {
      if (std::atomic<std::uint64_t>* d = m.random_draws()) (*fn)(path, *d);
      return true;
    }
  } v;
  v.fn = &fn;
  if (std::atomic<std::uint64_t>* d = model.random_draws()) fn(std::string(), *d);
  model.visit(v);
}
}  // namespace

std::map<std::string, std::uint64_t> random_draws_by_path(const Module& model) {
  std::map<std::string, std::uint64_t> out;
  for_random_draws(const_cast<Module&>(model),
                   [&](const std::string& path, std::atomic<std::uint64_t>& d) { out[path] = d.load(); });
  return out;
}

void restore_random_draws(Module& model, const std::map<std::string, std::uint64_t>& draws) {
  for_random_draws(model, [&](const std::string& path, std::atomic<std::uint64_t>& d) {
    if (const auto it = draws.find(path); it != draws.end()) d.store(it->second);
  });
}

std::string Module::summary() const {
  struct Printer final : FieldVisitor {
    std::ostringstream out;
    int depth = 1;
    void line(const std::string& text) { out << std::string(static_cast<std::size_t>(2 * depth), ' ') << text << "\n"; }
    void parameter(const std::string& path, Parameter& p) override {
      if (!p.defined()) return;
      line(path.substr(path.rfind('.') + 1) + ": " + p.shape().str() + (p.trainable() ? "" : " (frozen)") + "  " +
           with_commas(p.value().numel()));
    }
    void buffer(const std::string& path, Buffer& b) override {
      if (b.defined()) line(path.substr(path.rfind('.') + 1) + ": buffer " + b.get().shape().str());
    }
    bool enter(const std::string& path, Module& m) override {
      const std::string settings = m.describe();
      line(path.substr(path.rfind('.') + 1) + ": " + m.type_name() + "(" + settings + ")  " +
           with_commas(m.parameter_count()));
      ++depth;
      return true;
    }
    void leave(const std::string&, Module&) override { --depth; }
  } p;
  p.out << type_name() << "(" << describe() << ")  " << with_commas(parameter_count()) << " parameters ("
        << with_commas(parameter_count(true)) << " trainable)\n";
  visit(p);
  return p.out.str();
}

}  // namespace kiln::nn
