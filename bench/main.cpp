// kiln_bench: the workloads of shared/WORKLOADS.md on one device. Usually run through bench/run,
// which turns the Google Benchmark JSON into one line per workload.
//   kiln_bench [--device=cpu|vulkan|vulkan:N] [Google Benchmark flags]
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "bench/bench_common.h"

namespace {

bool offered(kiln::Device device) {
  for (const kiln::Device& d : kiln::devices())
    if (d == device) return true;
  return false;
}

std::string offered_list() {
  std::string out;
  for (const kiln::Device& d : kiln::devices()) out += (out.empty() ? "" : ", ") + d.str();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Take --device=... out of argv before Google Benchmark sees its own flags.
  std::string device_arg = "cpu";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--device=", 9) == 0) {
      device_arg = argv[i] + 9;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;

  const std::optional<kiln::Device> device = kiln::parse_device(device_arg);
  if (!device) {
    std::fprintf(stderr, "kiln_bench: unknown device '%s' (expected cpu, vulkan or vulkan:N)\n", device_arg.c_str());
    return 2;
  }
  if (!offered(*device)) {
    std::fprintf(stderr, "kiln_bench: device %s is not offered by this build of kiln (it offers: %s)\n",
                 device->str().c_str(), offered_list().c_str());
    return 2;
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("kiln_device", kiln::device_name(*device));
  kiln::bench::register_elementwise(*device);
  kiln::bench::register_reduce(*device);
  kiln::bench::register_matmul(*device);
  kiln::bench::register_autograd(*device);
  kiln::bench::register_nn(*device);
  kiln::bench::register_train(*device);
  kiln::bench::register_serve(*device);
  kiln::bench::register_fashion_mnist(*device);
  kiln::bench::register_onnx(*device);
#ifdef KILN_BENCH_SERVE
  kiln::bench::register_serve_load(*device);  // examples/serve over HTTP
  kiln::bench::register_serve_http(*device);
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
