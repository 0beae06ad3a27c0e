// libFuzzer target: the safetensors header parser and the tensor table validation on arbitrary
// bytes, taken as a whole file. Any input must give a header or a kiln::Error; a header it
// accepts must be safe to use — every tensor's bytes lie inside the input, the tensors tile the
// data exactly, and converting them (as a load would) stays in bounds. Built by run_fuzz.sh
// from the few sources it needs (no kiln runtime).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kiln/io/dtype_conversion.h"
#include "kiln/io/safetensors_header.h"
#include "kiln/base/error.h"

namespace {

void check(bool invariant) {
  if (!invariant) __builtin_trap();
}

// What a load does with an accepted tensor: convert it to kiln's f32 or i64.
void convert_like_a_load(std::span<const std::byte> bytes, const kiln::io::TensorInfo& t) {
  using kiln::io::FileDType;
  const FileDType target = kiln::io::is_file_float(t.dtype) ? FileDType::F32 : FileDType::I64;
  if (!kiln::io::convertible(t.dtype, target)) return;
  std::vector<std::byte> out(static_cast<std::size_t>(t.numel()) * kiln::io::file_dtype_size(target));
  (void)kiln::io::convert_elements(bytes, t.dtype, out, target);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  try {
    const kiln::io::SafetensorsHeader header = kiln::io::parse_safetensors(file, "fuzz.safetensors", "fuzz");
    check(header.data_start + header.data_size == size);
    std::uint64_t covered = 0;
    for (const kiln::io::TensorInfo& t : header.tensors) {
      check(t.begin == covered && t.begin <= t.end && t.end <= header.data_size);
      check(static_cast<std::uint64_t>(t.numel()) * kiln::io::file_dtype_size(t.dtype) == t.byte_size());
      covered = t.end;
      convert_like_a_load(file.subspan(header.data_start + t.begin, t.byte_size()), t);
    }
    check(covered == header.data_size);
  } catch (const kiln::Error&) {
    // Refusing the input is the expected outcome for almost all of it.
  }
  return 0;
}
