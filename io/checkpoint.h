// Checkpoints: everything a run needs to resume — the model's weights, the optimizer's and the
// scheduler's state, the step and the random generator — in one safetensors file, written to a
// temporary file and renamed into place, so a crash or a full disk never leaves a half-written
// checkpoint where a good one was.
//
//   io::save_checkpoint("run/last.safetensors", model, {opt.state(), sched.state(), step});
//   io::TrainingState s = io::load_checkpoint("run/last.safetensors", model);
//   default_generator() = *s.generator;   // resume the same random stream
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>

#include "kiln/engine/creation.h"
#include "kiln/io/module_io.h"
#include "kiln/optim/state.h"

namespace kiln::io {

struct TrainingState {
  optim::State optimizer{};
  optim::State scheduler{};
  std::int64_t step = 0;
  // The generator to resume with. save_checkpoint stores default_generator()'s seed and draws
  // when this is unset; load_checkpoint always sets it.
  std::optional<Generator> generator{};
};

// The file holds the model's state_dict under "model.", the states' tensors under "optimizer."
// and "scheduler.", and in its metadata the step, the generator and the states' numbers.
void save_checkpoint(const std::filesystem::path& path, const nn::Module& model, const TrainingState& state);

// Loads the model's weights (all or nothing, as load_model; `options` apply under "model.") and
// returns the rest. The states' tensors go to the device of the model's first tensor. Every
// part is checked before the model changes.
TrainingState load_checkpoint(const std::filesystem::path& path, nn::Module& model, const LoadOptions& options = {});

}  // namespace kiln::io
