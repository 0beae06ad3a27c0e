#include "support/reference.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>

namespace kiln::test {

std::vector<RefCase> load_cases(const std::string& file) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<RefCase>> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(file);
  if (it != cache.end()) return it->second;
  const std::string path = std::string(KILN_TEST_DATA_DIR) + "/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("reference file missing: " + path + " (run its generator in tests/data)");
  Json j = Json::parse(in);
  std::vector<RefCase> cases;
  for (const Json& c : j.at("cases")) {
    RefCase rc;
    rc.name = c.at("name").get<std::string>();
    rc.op = c.at("op").get<std::string>();
    rc.attrs = c.value("attrs", Json::object());
    for (const Json& t : c.at("inputs")) rc.inputs.push_back(t);
    for (const Json& t : c.at("outputs")) rc.outputs.push_back(t);
    cases.push_back(std::move(rc));
  }
  cache[file] = cases;
  return cases;
}

std::vector<RefCase> cases_for(const std::string& file, const std::string& op) {
  std::vector<RefCase> out;
  for (auto& c : load_cases(file))
    if (c.op == op) out.push_back(c);
  return out;
}

const RefCase* find_case(const std::vector<RefCase>& cases, const std::string& name) {
  for (const RefCase& c : cases)
    if (c.name == name) return &c;
  return nullptr;
}

DType parse_dtype(const std::string& s) {
  if (s == "f32") return DType::f32;
  if (s == "i64") return DType::i64;
  if (s == "bool") return DType::bool_;
  if (s == "f16") return DType::f16;
  if (s == "bf16") return DType::bf16;
  throw std::runtime_error("unknown dtype in reference data: " + s);
}

Shape json_shape(const Json& t) {
  Shape s;
  for (const Json& d : t.at("shape")) s.push_back(d.get<std::int64_t>());
  return s;
}

std::vector<double> json_values(const Json& t) {
  std::vector<double> v;
  for (const Json& x : t.at("data")) {
    if (x.is_string()) {
      const std::string s = x.get<std::string>();
      if (s == "nan") v.push_back(std::numeric_limits<double>::quiet_NaN());
      else if (s == "inf") v.push_back(std::numeric_limits<double>::infinity());
      else if (s == "-inf") v.push_back(-std::numeric_limits<double>::infinity());
      else throw std::runtime_error("bad value in reference data: " + s);
    } else if (x.is_boolean()) {
      v.push_back(x.get<bool>() ? 1.0 : 0.0);
    } else {
      v.push_back(x.get<double>());
    }
  }
  return v;
}

Tensor make_tensor(const Json& t, Device device) {
  const Shape shape = json_shape(t);
  const DType dtype = parse_dtype(t.at("dtype").get<std::string>());
  const std::vector<double> v = json_values(t);
  switch (dtype) {
    case DType::f32: return from_vector(std::vector<float>(v.begin(), v.end()), shape, device);
    case DType::i64: {
      std::vector<std::int64_t> iv;
      for (double x : v) iv.push_back(static_cast<std::int64_t>(x));
      return from_vector(std::move(iv), shape, device);
    }
    case DType::bool_: {
      std::vector<bool> bv;
      for (double x : v) bv.push_back(x != 0.0);
      return from_vector(bv, shape, device);
    }
    case DType::f16:
    case DType::bf16:  // every value of the data is exact in its dtype: the cast only narrows
      return cast(from_vector(std::vector<float>(v.begin(), v.end()), shape, device), dtype);
    default: throw std::runtime_error("unsupported dtype");
  }
}

::testing::AssertionResult matches(const Tensor& actual, const Json& expected, Tolerance tol) {
  const Shape want_shape = json_shape(expected);
  const DType want_dtype = parse_dtype(expected.at("dtype").get<std::string>());
  if (actual.shape() != want_shape)
    return ::testing::AssertionFailure() << "shape " << actual.shape().str() << ", expected " << want_shape.str();
  if (actual.dtype() != want_dtype)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype()) << ", expected "
                                         << dtype_name(want_dtype);
  return values_close(host_values(actual), json_values(expected), tol, !is_floating(actual.dtype()));
}

std::vector<double> host_values(const Tensor& t) {
  std::vector<double> out;
  switch (t.dtype()) {
    case DType::f32:
      for (float x : t.to_vector<float>().get()) out.push_back(x);
      break;
    case DType::i64:
      for (auto x : t.to_vector<std::int64_t>().get()) out.push_back(static_cast<double>(x));
      break;
    case DType::bool_:
      for (bool x : t.to_vector<bool>().get()) out.push_back(x ? 1.0 : 0.0);
      break;
    case DType::f16:
    case DType::bf16: return host_values(cast(t, DType::f32));  // exact: f32 holds every 16-bit value
    default: throw std::runtime_error(std::string("values: unsupported dtype ") + dtype_name(t.dtype()));
  }
  return out;
}

::testing::AssertionResult values_close(const std::vector<double>& got, const std::vector<double>& want, Tolerance tol,
                                 bool exact) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  int bad = 0;
  std::string report;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else if (exact) ok = g == w;
    else ok = std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
    if (!ok && ++bad <= 6) {
      char buf[128];
      std::snprintf(buf, sizeof buf, " [%zu] got %.9g want %.9g", i, g, w);
      report += buf;
    }
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " values differ:" << report;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_bits(const std::vector<double>& got, const std::vector<double>& want) {
  ::testing::AssertionResult same = values_close(got, want, Tolerance{0, 0}, true);
  if (!same) return same;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::signbit(got[i]) != std::signbit(want[i]) && !std::isnan(want[i]))
      return ::testing::AssertionFailure() << "[" << i << "] zeros of opposite sign";
  return ::testing::AssertionSuccess();
}

std::vector<Device> test_devices() {
  // Every device the engine offers (the CPU, and Vulkan devices such as lavapipe in CI);
  // KILN_TEST_VULKAN=0 keeps the op suites on the CPU.
  const char* env = std::getenv("KILN_TEST_VULKAN");
  const bool vulkan = !(env && std::string(env) == "0");
  std::vector<Device> out;
  for (const Device& d : devices())
    if (d.kind == DeviceKind::cpu || vulkan) out.push_back(d);
  return out;
}

std::vector<std::uint32_t> float_bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = std::bit_cast<std::uint32_t>(v[i]);
  return b;
}

}  // namespace kiln::test

namespace kiln::test {
namespace {

// Work still pending when a suite ends (ops whose results no test read) runs when the engine
// shuts down. The engine's own handler runs at exit, after the static destructors of
// libraries that set themselves up after it opened the GPUs: lavapipe's LLVM initializes at its
// first shader and is gone by then, and a shader it first compiles for that last work crashes
// the process (reproduced: an ops suite ending on ElementwiseBehaviour's unread i64 ops, with
// fusion off). Each suite runs what is pending on every device while every library is whole,
// and leaves the engine's exit handler nothing to compile. This file is in every suite's link
// (the reference readers), so the environment is registered in all of them.
class DrainBeforeExit : public ::testing::Environment {
 public:
  void TearDown() override {
    for (Device d : devices()) {
      try {
        sync(d).get();
      } catch (const std::exception&) {
        // A test left failed work behind on purpose; it has run, which is all this is for.
      }
    }
  }
};

[[maybe_unused]] ::testing::Environment* const g_drain_before_exit =
    ::testing::AddGlobalTestEnvironment(new DrainBeforeExit);

}  // namespace
}  // namespace kiln::test
