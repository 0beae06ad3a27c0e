// An optimizer's or a scheduler's optim::State in a safetensors file: its tensors as tensors,
// its numbers in the header's metadata as decimal strings that read back bit for bit.
//
//   io::save_state(optimizer.state(), "adam.safetensors");
//   optim::State s = io::load_state("adam.safetensors");
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/io/safetensors_file.h"
#include "kiln/optim/state.h"

namespace kiln::io {

void save_state(const optim::State& state, const std::filesystem::path& path);
// The state's tensors go to `device`.
optim::State load_state(const std::filesystem::path& path, Device device = Device::cpu());

namespace detail {

// The shortest decimal that reads back as the same double ("0.001", "1e-08", "inf", "-0").
std::string format_number(double value);
// The double a metadata string holds, or nothing when it is not exactly a number.
std::optional<double> parse_number(std::string_view text);

// Appends `state` to what a file will hold: tensors named prefix + name, numbers as metadata
// entries prefix + name. A number whose key is already taken ("format", "step") is an error.
void add_state(const optim::State& state, const std::string& prefix, std::vector<nn::NamedTensor>& tensors,
               std::map<std::string, std::string>& metadata, const std::string& file, const char* op);
// The state stored under `prefix` (tensors and metadata entries whose names start with it,
// except the keys in `reserved`). Checks every number before it makes any tensor.
optim::State read_state(const SafeTensorsFile& file, const std::string& prefix,
                        const std::vector<std::string>& reserved, Device device, const char* op);

}  // namespace detail

}  // namespace kiln::io
