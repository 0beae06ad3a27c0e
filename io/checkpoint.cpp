// A checkpoint is a plain safetensors file (any safetensors reader can open it); what makes it a
// checkpoint is its metadata: "format": "kiln.checkpoint" and the keys below.
#include "kiln/io/checkpoint.h"

#include <charconv>

#include "kiln/io/header_json.h"
#include "kiln/io/state_io.h"

namespace kiln::io {

namespace {

constexpr const char* kFormat = "kiln.checkpoint";
constexpr const char* kStep = "step";
constexpr const char* kSeed = "generator.seed";
constexpr const char* kDraws = "generator.draws";
// Before each random-drawing module's path: "random_draws.encoder.dropout" (nn::random_draws_by_path).
constexpr const char* kModuleDraws = "random_draws";

std::string module_draws_key(const std::string& path) {
  return path.empty() ? kModuleDraws : std::string(kModuleDraws) + "." + path;
}

template <class Int>
Int metadata_integer(const SafeTensorsFile& file, const char* key, const char* op) {
  const auto it = file.metadata().find(key);
  KILN_CHECK(it != file.metadata().end(), op,
             file.path().string() + ": the checkpoint has no " + key + " in its metadata");
  const std::string& text = it->second;
  Int value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  KILN_CHECK(ec == std::errc() && end == text.data() + text.size() && !text.empty(), op,
             file.path().string() + ": metadata " + detail::in_quotes(key) + " holds " + detail::in_quotes(text) +
                 ", not an integer in range");
  return value;
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const nn::Module& model, const TrainingState& state) {
  const char* op = "save_checkpoint";
  const Generator gen = state.generator.value_or(default_generator());
  std::map<std::string, std::string> metadata{{"format", kFormat},
                                              {kStep, std::to_string(state.step)},
                                              {kSeed, std::to_string(gen.seed())},
                                              {kDraws, std::to_string(gen.draws())}};
  for (const auto& [module, draws] : nn::random_draws_by_path(model))
    metadata[module_draws_key(module)] = std::to_string(draws);
  std::vector<nn::NamedTensor> tensors;
  for (nn::NamedTensor& t : model.state_dict()) tensors.push_back({"model." + t.name, std::move(t.tensor)});
  detail::add_state(state.optimizer, "optimizer.", tensors, metadata, path.string(), op);
  detail::add_state(state.scheduler, "scheduler.", tensors, metadata, path.string(), op);
  detail::write_safetensors(tensors, metadata, std::nullopt, path, op);
}

TrainingState load_checkpoint(const std::filesystem::path& path, nn::Module& model, const LoadOptions& options) {
  const char* op = "load_checkpoint";
  const SafeTensorsFile file(path, op);
  const auto format = file.metadata().find("format");
  KILN_CHECK(format != file.metadata().end() && format->second == kFormat, op,
             path.string() + ": not a kiln checkpoint (its metadata has no \"format\": \"" + kFormat + "\")");

  TrainingState state;
  state.step = metadata_integer<std::int64_t>(file, kStep, op);
  Generator gen;
  gen.restore(metadata_integer<std::uint64_t>(file, kSeed, op), metadata_integer<std::uint64_t>(file, kDraws, op));
  state.generator = gen;
  const std::vector<nn::NamedTensor> current = model.state_dict();
  const Device device = current.empty() ? Device::cpu() : current.front().tensor.device();
  state.optimizer = detail::read_state(file, "optimizer.", {}, device, op);
  state.scheduler = detail::read_state(file, "scheduler.", {}, device, op);

  LoadOptions model_options = options;
  model_options.file_prefix = "model." + options.file_prefix;
  // The random-drawing modules' counts (a checkpoint written before kiln saved them has none:
  // the counts stay as they are).
  std::map<std::string, std::uint64_t> draws;
  for (const auto& [module, count] : nn::random_draws_by_path(model)) {
    const std::string key = module_draws_key(module);
    if (file.metadata().count(key)) draws[module] = metadata_integer<std::uint64_t>(file, key.c_str(), op);
  }
  load_model(model, file, model_options, op);
  nn::restore_random_draws(model, draws);
  return state;
}

}  // namespace kiln::io
