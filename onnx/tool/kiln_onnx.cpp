// kiln-onnx: run an ONNX model with kiln, or run ONNX backend test cases (a folder with
// model.onnx and test_data_set_N/{input,output}_K.pb) and report each as PASS, FAIL or
// UNSUPPORTED.
//
//   kiln-onnx test [--device cpu|vulkan] [--exclude NAME,...] [--min-pass N] [--markdown FILE] DIR...
//   kiln-onnx run MODEL.onnx [--device D] [--input name=file.pb]... [--runs N] [--save-outputs DIR]
//   kiln-onnx ops
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

int usage() {
  std::cerr << "usage:\n"
               "  kiln-onnx test [--device cpu|vulkan] [--exclude NAME,...] [--min-pass N] [--markdown FILE] DIR...\n"
               "      runs each case folder (model.onnx, test_data_set_N/) under DIR: one line per case,\n"
               "      PASS, FAIL (largest error) or UNSUPPORTED (the op); exit status 1 on any FAIL\n"
               "      (or fewer than N passes); --markdown writes the per-op table\n"
               "  kiln-onnx run MODEL.onnx [--device D] [--input name=file.pb]... [--runs N] [--save-outputs DIR]\n"
               "      runs the model (inputs not given: random values of the declared shape) and\n"
               "      prints each output's shape, first values and the time per run\n"
               "  kiln-onnx ops\n"
               "      lists the op types kiln runs\n";
  return 2;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The largest error of `got` against `want`, as a multiple of the tolerance (> 1 fails), and
// what it was. Integers and bools must match exactly; NaN matches NaN.
struct Comparison {
  double worst = 0;  // |got - want| / (atol + rtol * |want|)
  double abs_error = 0;
  std::string problem;  // a shape or type mismatch
};

Comparison compare(const Tensor& got_in, const Tensor& want_in) {
  Comparison c;
  // 16-bit floats widen on their own device (the CPU may not hold them).
  const Tensor wide = is_half(got_in.dtype()) ? cast(got_in, DType::f32) : got_in;
  const Tensor got = wide.device() == Device::cpu() ? wide : to(wide, Device::cpu());
  const Tensor want_wide = is_half(want_in.dtype()) ? cast(want_in, DType::f32) : want_in;
  const Tensor want = want_wide.device() == Device::cpu() ? want_wide : to(want_wide, Device::cpu());
  if (got.shape() != want.shape()) {
    c.problem = "shape " + got.shape().str() + ", expected " + want.shape().str();
    return c;
  }
  const bool want_float = is_floating(want.dtype());
  if (want_float != is_floating(got.dtype()) || (!want_float && got.dtype() != want.dtype()) ||
      is_half(want_in.dtype()) != is_half(got_in.dtype())) {
    c.problem = std::string("type ") + dtype_name(got_in.dtype()) + ", expected " + dtype_name(want_in.dtype());
    return c;
  }
  const auto g = cast(got, DType::f32).to_vector<float>().get();
  const auto w = cast(want, DType::f32).to_vector<float>().get();
  const double rtol = want_float ? 1e-3 : 0, atol = want_float ? 1e-5 : 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(w[k]) && std::isnan(g[k])) continue;
    if (std::isinf(w[k]) && g[k] == w[k]) continue;
    const double err = std::abs(double(g[k]) - double(w[k]));
    const double scaled = std::isnan(err) ? INFINITY : err / (atol + rtol * std::abs(double(w[k])) + 1e-30);
    if (scaled > c.worst) {
      c.worst = scaled;
      c.abs_error = err;
    }
  }
  return c;
}

std::vector<fs::path> files_like(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.path().extension() == ".pb")
      found.emplace_back(std::stoi(name.substr(prefix.size())), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& [k, p] : found) paths.push_back(p);
  return paths;
}

enum class Outcome { pass, fail, unsupported, skipped };

struct CaseResult {
  Outcome outcome;
  std::string detail;
  std::vector<std::string> op_types;
};

CaseResult run_case(const fs::path& dir, Device device) {
  CaseResult r{Outcome::pass, "", {}};
  try {
    onnx::Model model = onnx::load(dir / "model.onnx");
    r.op_types = model.op_types();
    model.eval();
    if (device != Device::cpu()) model = model.to(device);
    for (const auto* infos : {&model.inputs(), &model.outputs()}) {
      for (const auto& info : *infos) {
        if (is_half(info.dtype) && !device_supports(device, info.dtype))
          return {Outcome::unsupported, std::string(dtype_name(info.dtype)) + " on " + device.str(), r.op_types};
        // NumPy has no bfloat16: ONNX's test data holds such values as uint16 bit patterns.
        if (info.dtype == DType::bf16) return {Outcome::unsupported, "bfloat16 test data (uint16 bits)", r.op_types};
      }
    }
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) return {Outcome::fail, "no test_data_set_N folder", r.op_types};
    double worst = 0, worst_abs = 0;
    for (const auto& set : sets) {
      const auto input_files = files_like(set, "input_");
      if (input_files.size() != model.inputs().size()) return {Outcome::unsupported, "non-tensor inputs", r.op_types};
      std::vector<Tensor> inputs;
      for (const auto& f : input_files) inputs.push_back(onnx::load_tensor(f, device).tensor);
      const auto outputs = model.forward(inputs);
      const auto output_files = files_like(set, "output_");
      if (output_files.size() != outputs.size()) return {Outcome::unsupported, "non-tensor outputs", r.op_types};
      for (std::size_t k = 0; k < outputs.size(); ++k) {
        const Comparison c = compare(outputs[k], onnx::load_tensor(output_files[k], device).tensor);
        if (!c.problem.empty()) {
          return {Outcome::fail, "output " + std::to_string(k) + ": " + c.problem, r.op_types};
        }
        if (c.worst > worst) {
          worst = c.worst;
          worst_abs = c.abs_error;
        }
      }
    }
    if (worst > 1) {
      std::ostringstream s;
      s << "largest error " << worst_abs << ", " << worst << "x the tolerance";
      return {Outcome::fail, s.str(), r.op_types};
    }
    return r;
  } catch (const onnx::UnsupportedError& e) {
    return {Outcome::unsupported, e.feature(), r.op_types};
  } catch (const std::exception& e) {
    return {Outcome::fail, e.what(), r.op_types};
  }
}

std::vector<fs::path> case_folders(const fs::path& root) {
  if (fs::exists(root / "model.onnx")) return {root};
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

// The README's operator table: each op type kiln runs with its node-test counts, then the op
// types (and other features) the cases needed that kiln does not run.
void write_markdown(const std::string& path, const std::map<std::string, std::array<int, 3>>& per_op) {
  std::ofstream out(path);
  const auto runs = onnx::supported_op_types();
  const std::set<std::string> supported(runs.begin(), runs.end());
  out << "| op | node tests passed | failed | unsupported settings |\n|---|---|---|---|\n";
  for (const auto& op : runs) {
    const auto it = per_op.find(op);
    const std::array<int, 3> n = it == per_op.end() ? std::array<int, 3>{0, 0, 0} : it->second;
    out << "| " << op << " | " << n[0] << " | " << n[1] << " | " << n[2] << " |\n";
  }
  out << "\nNot supported (node tests that need them):";
  const char* sep = " ";
  for (const auto& [op, n] : per_op) {
    if (supported.count(op)) continue;
    out << sep << op << " (" << n[2] << ")";
    sep = ", ";
  }
  out << ".\n";
}

int test_command(const std::vector<std::string>& args) {
  Device device = Device::cpu();
  std::set<std::string> excluded;
  std::string markdown;
  int min_pass = 0;  // a guard for CI: fewer passes (a case turned unsupported) fail the run
  std::vector<fs::path> roots;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k] == "--device" && k + 1 < args.size()) {
      const auto d = parse_device(args[++k]);
      if (!d) return usage();
      device = *d;
    } else if (args[k] == "--exclude" && k + 1 < args.size()) {
      for (const auto& name : split_list(args[++k])) excluded.insert(name);
    } else if (args[k] == "--min-pass" && k + 1 < args.size()) {
      min_pass = std::atoi(args[++k].c_str());
    } else if (args[k] == "--markdown" && k + 1 < args.size()) {
      markdown = args[++k];
    } else if (args[k].rfind("--", 0) == 0) {
      return usage();
    } else {
      roots.emplace_back(args[k]);
    }
  }
  if (roots.empty()) return usage();
  int counts[4] = {0, 0, 0, 0};
  std::map<std::string, std::array<int, 3>> per_op;
  for (const auto& root : roots) {
    if (!fs::is_directory(root)) {
      std::cerr << "kiln-onnx: " << root << " is not a folder\n";
      return 2;
    }
    for (const auto& dir : case_folders(root)) {
      const std::string name = dir.filename().string();
      if (excluded.count(name)) {
        std::cout << "SKIPPED " << name << " (excluded)\n";
        ++counts[3];
        continue;
      }
      const CaseResult r = run_case(dir, device);
      const char* word = r.outcome == Outcome::pass ? "PASS" : r.outcome == Outcome::fail ? "FAIL" : "UNSUPPORTED";
      std::cout << word << ' ' << name << (r.detail.empty() ? "" : " (" + r.detail + ")") << '\n';
      ++counts[int(r.outcome)];
      // The per-op table counts a case under the ops it uses; function-expanded cases (many
      // ops standing for one) are left out of it.
      if (name.size() > 9 && name.compare(name.size() - 9, 9, "_expanded") == 0) continue;
      std::vector<std::string> ops = r.op_types;
      if (ops.empty() && r.outcome == Outcome::unsupported) ops.push_back(r.detail);
      for (const auto& op : ops) ++per_op[op][std::size_t(r.outcome)];
    }
  }
  std::cout << counts[0] + counts[1] + counts[2] + counts[3] << " cases: " << counts[0] << " passed, " << counts[1]
            << " failed, " << counts[2] << " unsupported, " << counts[3] << " skipped\n";
  if (!markdown.empty()) write_markdown(markdown, per_op);
  if (counts[0] < min_pass) {
    std::cout << "only " << counts[0] << " cases passed, expected at least " << min_pass << '\n';
    return 1;
  }
  return counts[1] > 0 ? 1 : 0;
}

Tensor random_input(const onnx::ValueInfo& info, Device device) {
  std::vector<std::int64_t> dims;
  for (auto d : info.dims) {
    if (d < 0) throw Error("kiln-onnx", "input '" + info.name + "' has a dynamic dim: give it with --input");
    dims.push_back(d);
  }
  if (info.dtype == DType::i64) return zeros(Shape(dims), {DType::i64, device});
  if (info.dtype == DType::bool_) return cast(zeros(Shape(dims), {DType::f32, device}), DType::bool_);
  return cast(randn(Shape(dims), default_generator(), {DType::f32, device}), info.dtype);
}

int run_command(const std::vector<std::string>& args) {
  if (args.empty()) return usage();
  Device device = Device::cpu();
  std::map<std::string, fs::path> given;
  std::string save_dir;  // outputs as output_K.pb (ONNX's test data layout)
  int runs = 10;
  for (std::size_t k = 1; k < args.size(); ++k) {
    if (args[k] == "--device" && k + 1 < args.size()) {
      const auto d = parse_device(args[++k]);
      if (!d) return usage();
      device = *d;
    } else if (args[k] == "--input" && k + 1 < args.size()) {
      const std::string spec = args[++k];
      const auto eq = spec.find('=');
      if (eq == std::string::npos) return usage();
      given[spec.substr(0, eq)] = spec.substr(eq + 1);
    } else if (args[k] == "--save-outputs" && k + 1 < args.size()) {
      save_dir = args[++k];
    } else if (args[k] == "--runs" && k + 1 < args.size()) {
      runs = std::max(1, std::atoi(args[++k].c_str()));
    } else {
      return usage();
    }
  }
  onnx::Model model = onnx::load(args[0]);
  model.eval();
  if (device != Device::cpu()) model = model.to(device);
  std::vector<Tensor> inputs;
  for (const auto& info : model.inputs()) {
    const auto it = given.find(info.name);
    inputs.push_back(it != given.end() ? onnx::load_tensor(it->second, device).tensor : random_input(info, device));
    given.erase(info.name);
  }
  if (!given.empty()) throw Error("kiln-onnx", "the model has no input '" + given.begin()->first + "'");
  std::vector<Tensor> outputs;
  std::vector<double> times;
  for (int r = 0; r < runs + 1; ++r) {
    const auto start = std::chrono::steady_clock::now();
    outputs = model.forward(inputs);
    for (const auto& o : outputs) (void)to_bytes(o).get();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) times.push_back(ms);  // the first run compiles kernels and fills pools
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Tensor values = cast(to(outputs[k], Device::cpu()), DType::f32);
    const auto v = values.to_vector<float>().get();
    std::cout << model.outputs()[k].name << ": " << dtype_name(outputs[k].dtype()) << ' ' << outputs[k].shape().str()
              << " [";
    for (std::size_t i = 0; i < v.size() && i < 8; ++i) std::cout << (i ? ", " : "") << v[i];
    std::cout << (v.size() > 8 ? ", ...]" : "]") << '\n';
  }
  if (!save_dir.empty()) {
    fs::create_directories(save_dir);
    for (std::size_t k = 0; k < outputs.size(); ++k)
      onnx::save_tensor(fs::path(save_dir) / ("output_" + std::to_string(k) + ".pb"), model.outputs()[k].name,
                        outputs[k]);
  }
  std::sort(times.begin(), times.end());
  std::printf("%d runs on %s: median %.3f ms, min %.3f ms\n", runs, device.str().c_str(), times[times.size() / 2],
              times[0]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  NoGradGuard inference;  // the tool only runs models: no autograd graph
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "test") return test_command(args);
    if (command == "run") return run_command(args);
    if (command == "ops") {
      for (const auto& op : onnx::supported_op_types()) std::cout << op << '\n';
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "kiln-onnx: " << e.what() << '\n';
    return 1;
  }
  return usage();
}
