// Reference data for op tests. tests/data/gen_<family>.py (run with a Python that has torch)
// writes tests/data/<family>.json: a list of cases, each with named inputs, attributes and the
// outputs PyTorch computed. The helpers here turn those into kiln tensors and compare results.
//
// JSON layout of one case:
//   {"name": "add_broadcast", "op": "add", "attrs": {...},
//    "inputs":  [{"shape": [2, 3], "dtype": "f32", "data": [...]}, ...],
//    "outputs": [{"shape": [2, 3], "dtype": "f32", "data": [...]}, ...]}
// Non-finite floats are written as the strings "nan", "inf" and "-inf".
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/engine/kiln.h"

namespace kiln::test {

using Json = nlohmann::json;

struct RefCase {
  std::string name;
  std::string op;
  Json attrs;
  std::vector<Json> inputs;
  std::vector<Json> outputs;
};

// Loads tests/data/<file>; fails the test with a clear message if it is missing.
std::vector<RefCase> load_cases(const std::string& file);
// Cases of one file whose "op" is `op`.
std::vector<RefCase> cases_for(const std::string& file, const std::string& op);
// The case called `name`, or null.
const RefCase* find_case(const std::vector<RefCase>& cases, const std::string& name);

DType parse_dtype(const std::string& s);
Shape json_shape(const Json& t);
// A kiln tensor on `device` holding the values of a JSON tensor (f16 and bf16: uploaded as f32,
// cast on the device).
Tensor make_tensor(const Json& t, Device device = Device::cpu());
std::vector<double> json_values(const Json& t);

// Tolerances for comparing floats; integers and bools must match exactly.
struct Tolerance {
  double rtol = 1e-5;
  double atol = 1e-6;
};

// Waits for `actual` and compares shape, dtype and every value with the JSON tensor.
::testing::AssertionResult matches(const Tensor& actual, const Json& expected, Tolerance tol = {});

// The values of a tensor as doubles (waits; f16 and bf16 through a cast to f32 on its device).
std::vector<double> host_values(const Tensor& t);
// The bit patterns of `v`: compares results bit for bit, NaN payloads and signed zeros too.
std::vector<std::uint32_t> float_bits(const std::vector<float>& v);

// Element by element: NaN matches NaN, infinities match exactly, `exact` (integers, bools)
// allows no difference, others |got - want| <= atol + rtol * |want|. Reports the first few.
::testing::AssertionResult values_close(const std::vector<double>& got, const std::vector<double>& want, Tolerance tol,
                                 bool exact = false);

// The same values bit for bit (from host_values): exact, NaN matching NaN, zeros of the same
// sign. Fused runs against unfused ones; read the fused values before fusion is turned off.
::testing::AssertionResult same_bits(const std::vector<double>& got, const std::vector<double>& want);

// The devices op suites are instantiated for: every device the engine opens, so the CPU and,
// in a Vulkan build, each Vulkan device (lavapipe where tests/CMakeLists.txt finds its ICD and
// points VK_ICD_FILENAMES at it). KILN_TEST_VULKAN=0 in the environment leaves only the CPU.
std::vector<Device> test_devices();

}  // namespace kiln::test

namespace kiln::test {
// Names device-parameterized tests "cpu", "vulkan0", ...
inline std::string device_param_name(const ::testing::TestParamInfo<Device>& info) {
  std::string s = info.param.str();
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  return out;
}
}  // namespace kiln::test
