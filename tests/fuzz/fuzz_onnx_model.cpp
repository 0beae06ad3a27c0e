// libFuzzer target: the ONNX loader's parser (protobuf through Debian's generated classes, then
// kiln's checks: opset, names, topological order, cycles, initializer sizes) on arbitrary bytes.
// Any input must give a graph or a kiln::Error; a graph it accepts must be consistent: every
// initializer holds exactly the elements its shape says, and each node reads only values that
// an earlier node, an initializer or a graph input provides. Built by run_fuzz_onnx.sh from
// the parser's sources alone (no kiln runtime).
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>

#include "kiln/onnx/graph.h"

namespace {

void check(bool invariant) {
  if (!invariant) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    // External data is read relative to a folder that does not exist: the loader must refuse
    // it with an error, never read outside.
    const auto g = kiln::onnx::detail::parse_model(bytes, "/nonexistent-kiln-fuzz", "fuzz.onnx");
    std::unordered_set<std::string> available;
    for (const auto& init : g->initializers) {
      check(init.value->numel() == std::int64_t(init.value->size()));
      available.insert(init.name);
    }
    for (const auto& in : g->inputs) available.insert(in.name);
    for (const auto& node : g->nodes) {
      for (const auto& name : node.inputs) check(name.empty() || available.count(name) != 0);
      for (const auto& name : node.outputs) available.insert(name);
    }
    check(g->last_uses.size() == g->nodes.size());
  } catch (const kiln::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  return 0;
}
