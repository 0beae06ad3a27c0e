// Loading is two passes: match every file tensor to a module tensor and check it (collecting
// every problem), then — only when nothing is wrong — make all the new tensors, and only once
// all exist set them. A failure anywhere before the last step leaves the module untouched.
#include "kiln/io/module_io.h"

#include <unordered_map>

#include "kiln/io/dtype_conversion.h"
#include "kiln/io/header_json.h"
#include "kiln/io/module_fields.h"

namespace kiln::io {

namespace {

constexpr std::size_t kMaxListedProblems = 64;

std::string file_shape_str(const TensorInfo& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

bool same_shape(const TensorInfo& t, const Shape& shape) {
  if (t.shape.size() != shape.size()) return false;
  for (std::size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] != shape[static_cast<int>(i)]) return false;
  return true;
}

struct Match {
  const TensorInfo* info = nullptr;
  const detail::ModuleSlot* slot = nullptr;
};

class LoadPlan {
 public:
  LoadPlan(const SafeTensorsFile& file, const std::vector<detail::ModuleSlot>& slots, const LoadOptions& options)
      : options_(options), slots_(slots), claimed_(slots.size(), nullptr) {
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i].path.starts_with(options.module_prefix)) by_path_.emplace(slots[i].path, i);
    for (const TensorInfo& t : file.tensors()) match(t);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (claimed_[i] || !slots[i].path.starts_with(options.module_prefix)) continue;
      report.missing.push_back(slots[i].path);
      if (options.strict)
        problems_.push_back("missing: " + detail::in_quotes(slots[i].path) + " (" + dtype_name(slots[i].value.dtype()) +
                            slots[i].value.shape().str() + " in the module)");
    }
  }

  // One error for everything wrong, or nothing.
  void throw_if_problems(const SafeTensorsFile& file, const char* op) const {
    if (problems_.empty()) return;
    std::string message = file.path().string() + " does not fit the module (" + std::to_string(problems_.size()) +
                          (problems_.size() == 1 ? " problem" : " problems") + "; nothing was loaded):";
    for (std::size_t i = 0; i < problems_.size() && i < kMaxListedProblems; ++i) message += "\n  " + problems_[i];
    if (problems_.size() > kMaxListedProblems)
      message += "\n  ... and " + std::to_string(problems_.size() - kMaxListedProblems) + " more";
    throw Error(op, message);
  }

  std::vector<Match> matches;
  LoadReport report;

 private:
  // The module path a file tensor loads into (prefixes, then the name map), or nothing when the
  // options leave it out.
  std::optional<std::string> target_path(const std::string& file_name) const {
    if (!file_name.starts_with(options_.file_prefix)) return std::nullopt;
    std::string name = file_name.substr(options_.file_prefix.size());
    if (options_.rename) {
      std::optional<std::string> renamed = options_.rename(name);
      if (!renamed) return std::nullopt;
      name = std::move(*renamed);
    }
    return options_.module_prefix + name;
  }

  void match(const TensorInfo& t) {
    const std::optional<std::string> path = target_path(t.name);
    if (!path) return;
    const auto it = by_path_.find(*path);
    if (it == by_path_.end()) {
      report.unexpected.push_back(t.name);
      if (options_.strict)
        problems_.push_back("unexpected: " + detail::in_quotes(t.name) + " (" + file_dtype_name(t.dtype) +
                            file_shape_str(t) + " in the file" + target_note(t.name, *path) + ")");
      return;
    }
    if (const TensorInfo* other = claimed_[it->second]) {
      problems_.push_back("ambiguous: " + detail::in_quotes(other->name) + " and " + detail::in_quotes(t.name) +
                          " both load into " + detail::in_quotes(*path));
      return;
    }
    claimed_[it->second] = &t;
    check(t, slots_[it->second]);
  }

  // ", module path 'fc.weight'" when the module path differs from the file name.
  static std::string target_note(const std::string& file_name, const std::string& path) {
    return file_name == path ? std::string() : ", module path " + detail::in_quotes(path);
  }

  void check(const TensorInfo& t, const detail::ModuleSlot& slot) {
    std::string names = detail::in_quotes(t.name);
    if (t.name != slot.path) names += " (module path " + detail::in_quotes(slot.path) + ")";
    bool ok = true;
    if (!same_shape(t, slot.value.shape())) {
      problems_.push_back("wrong shape: " + names + " is " + file_shape_str(t) + " in the file, " +
                          slot.value.shape().str() + " in the module");
      ok = false;
    }
    const DType want = slot.value.dtype();
    const FileDType stored = t.dtype;
    if (stored != file_dtype(want)) {
      const bool can = convertible(stored, file_dtype(want));
      if (!options_.convert_dtypes || !can) {
        problems_.push_back("wrong dtype: " + names + " is " + file_dtype_name(stored) + " in the file, " +
                            dtype_name(want) + " in the module" +
                            (can ? " (set convert_dtypes to convert it)" : " (no conversion between them)"));
        ok = false;
      }
    }
    if (ok) matches.push_back({&t, &slot});
  }

  const LoadOptions& options_;
  const std::vector<detail::ModuleSlot>& slots_;
  std::unordered_map<std::string_view, std::size_t> by_path_;  // in-scope module paths -> slot
  std::vector<const TensorInfo*> claimed_;                     // the file tensor each slot takes
  std::vector<std::string> problems_;
};

}  // namespace

void save_model(const nn::Module& module, const std::filesystem::path& path, const SaveOptions& options) {
  std::vector<nn::NamedTensor> tensors = module.state_dict();
  if (!options.prefix.empty())
    for (nn::NamedTensor& t : tensors) t.name = options.prefix + t.name;
  std::map<std::string, std::string> metadata = options.metadata;
  metadata.emplace("format", "pt");  // kept when the caller set "format"
  detail::write_safetensors(tensors, metadata, options.float_dtype, path, "save_model");
}

LoadReport load_model(nn::Module& module, const SafeTensorsFile& file, const LoadOptions& options, const char* op) {
  std::vector<detail::ModuleSlot> slots = detail::module_slots(module);
  LoadPlan plan(file, slots, options);
  plan.throw_if_problems(file, op);

  // Every new value exists before the first is set: a failure here (a value that does not fit
  // its dtype, a device that cannot hold it) still leaves the module as it was.
  std::vector<Tensor> values;
  values.reserve(plan.matches.size());
  for (const Match& m : plan.matches)
    values.push_back(
        file.tensor_as(*m.info, m.slot->value.dtype(), m.slot->value.device(), options.convert_dtypes, op));
  for (std::size_t i = 0; i < plan.matches.size(); ++i) {
    plan.matches[i].slot->set(values[i]);
    plan.report.loaded.push_back(plan.matches[i].slot->path);
  }
  return std::move(plan.report);
}

LoadReport load_model(nn::Module& module, const std::filesystem::path& path, const LoadOptions& options) {
  const SafeTensorsFile file(path, "load_model");
  return load_model(module, file, options, "load_model");
}

}  // namespace kiln::io
