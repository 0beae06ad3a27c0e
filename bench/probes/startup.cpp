// kiln_startup: process start to the first result of the MLP 784-512-512-10 (ReLU, batch 1),
// on the CPU — what a service pays when it starts, or a command-line tool on every run. The
// weights are made in the process (a service would map them from a file: io::load_file), one
// request runs, and the program prints how long it has been alive, read from the kernel's own
// record of its start (/proc/self/stat), and how long main() took.
// Usage: kiln_startup   (bench/run's startup line runs it several times and takes the median)
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "kiln/engine/kiln.h"

namespace {

// Seconds since this process started: /proc/self/stat's field 22 (start time in clock ticks
// after boot) against CLOCK_BOOTTIME. Ticks are 10 ms: a coarse figure; main()'s own time is
// the fine one.
double seconds_alive() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;  // fields 3..22 after "pid (comm)"
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9 - std::stod(field) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main() {
  using namespace kiln;
  const auto start = std::chrono::steady_clock::now();
  Generator gen(5);
  const Tensor w1 = rand(Shape{784, 512}, gen), b1 = rand(Shape{512}, gen);
  const Tensor w2 = rand(Shape{512, 512}, gen), b2 = rand(Shape{512}, gen);
  const Tensor w3 = rand(Shape{512, 10}, gen), b3 = rand(Shape{10}, gen);
  const Tensor x = from_vector(std::vector<float>(784, 0.5f), {1, 784});
  const Tensor y = add(matmul(relu(add(matmul(relu(add(matmul(x, w1), b1)), w2), b2)), w3), b3);
  const std::vector<float> out = y.to_vector<float>().get();
  const double main_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"main_ms\": %.3f, \"alive_ms\": %.1f, \"out0\": %g}\n", main_ms, seconds_alive() * 1e3, out[0]);
  return 0;
}
