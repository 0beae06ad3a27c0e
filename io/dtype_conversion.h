// Element types between a file and kiln: which safetensors dtype holds which kiln dtype, and the
// host-side conversions a load or a save may ask for (f16/bf16/f64 <-> f32, narrow integers ->
// i64). Conversions are explicit: without them a dtype mismatch is an error, never a silent cast.
// Runtime-free, like the header parser, so the fuzz target can run conversions on file bytes.
#pragma once
#include <cstddef>
#include <optional>
#include <span>

#include "kiln/io/safetensors_header.h"
#include "kiln/ops/dtype.h"

namespace kiln::io {

// The kiln dtype that holds a file dtype as it is (F32 -> f32, BOOL -> bool), or none (F64, I32...).
std::optional<DType> kiln_dtype(FileDType t);
// How kiln writes a dtype.
FileDType file_dtype(DType t);

bool is_file_float(FileDType t);    // F64, F32, F16, BF16 (not the F8 kinds: no conversion for those)
bool is_file_integer(FileDType t);  // I8..I64, U8..U64

// Whether a conversion may turn `from` into `to`: floats into floats, integers into integers
// (the wide ones only when every value fits, checked by convert_elements), bool into bool.
bool convertible(FileDType from, FileDType to);

// Converts the elements of `src` (dtype `from`, little-endian) into `dst` (dtype `to`; exactly as
// many elements). Floats round to nearest even (as torch's .to() does); BOOL bytes other than 0
// become 1. Returns the index of the first element that does not fit `to` (a U64 above the i64
// range), or nothing when all did.
std::optional<std::size_t> convert_elements(std::span<const std::byte> src, FileDType from, std::span<std::byte> dst,
                                            FileDType to);

// The f32 value of f16 and bf16 bit patterns (exact: every 16-bit float is an f32).
float f16_to_f32(std::uint16_t bits);
float bf16_to_f32(std::uint16_t bits);

}  // namespace kiln::io
