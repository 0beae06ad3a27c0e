// A module's weights in a safetensors file, under PyTorch's state_dict names, so a file that
// PyTorch (or Hugging Face) wrote loads into the kiln twin of the model, and back.
//
//   io::save_model(model, "model.safetensors");
//   io::LoadReport r = io::load_model(model, "model.safetensors");          // all or nothing
//   io::load_model(big, "backbone.safetensors", {.module_prefix = "backbone."});
//
// Loading checks every tensor before it changes any: one kiln::Error lists every tensor that is
// missing, unexpected, of the wrong shape or of the wrong dtype, and the module is left as it was.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/io/safetensors_file.h"
#include "kiln/io/safetensors_writer.h"
#include "kiln/nn/module.h"

namespace kiln::io {

struct LoadOptions {
  // Loads only the file's tensors whose names start with this, with it removed: "model." loads
  // the file's "model.fc.weight" into the module's "fc.weight". Other file tensors are ignored.
  std::string file_prefix{};
  // Loads only into the module's tensors whose paths start with this: the file's "conv.weight"
  // loads into "backbone.conv.weight". Other module tensors are not expected in the file.
  std::string module_prefix{};
  // Maps a file name (file_prefix removed) to a module path (module_prefix is put in front of
  // the result); nullopt skips that tensor. Unset: names are kept.
  std::function<std::optional<std::string>(const std::string&)> rename{};
  // Module tensors the file lacks and file tensors the module lacks are errors; when false they
  // are only listed in the report. A wrong shape or dtype is always an error.
  bool strict = true;
  // A tensor stored in another float dtype (f16, bf16, f64) is converted to the module's, and a
  // narrower integer to i64; without it a dtype mismatch is an error.
  bool convert_dtypes = false;
};

// What a load did, like PyTorch's load_state_dict result: paths in the module's names, file
// names as the file spells them.
struct LoadReport {
  std::vector<std::string> loaded{};      // module paths set from the file
  std::vector<std::string> missing{};     // module paths the file has nothing for (strict = false)
  std::vector<std::string> unexpected{};  // file names no module path takes (strict = false)
};

// Writes module.state_dict() (parameters and buffers). Waits for the values.
void save_model(const nn::Module& module, const std::filesystem::path& path, const SaveOptions& options = {});

LoadReport load_model(nn::Module& module, const std::filesystem::path& path, const LoadOptions& options = {});
// The same from a file already open (a checkpoint holds a module among other things).
LoadReport load_model(nn::Module& module, const SafeTensorsFile& file, const LoadOptions& options = {},
                      const char* op = "load_model");

}  // namespace kiln::io
