// A CPU-only program opens no GPU: the engine discovers Vulkan devices on first use of one, or
// when devices are listed. Checked in a fresh process (this binary re-run on a disabled test),
// since other tests of the suite have opened the GPUs already.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "kiln/engine/kiln.h"
#include "kiln/engine/runtime.h"
#include "support/child_test.h"

namespace kiln {
namespace {

// Runs in the child: exits 0 when every expectation held, else the number of the one that failed.
TEST(LazyGpusChild, DISABLED_CpuWorkOpensNoGpu) {
  if (Engine::get().gpus_opened()) std::exit(10);  // the engine starts on the CPU alone
  const Tensor x = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  if (matmul(x, x).to_vector<float>().get() != std::vector<float>{7, 10, 15, 22}) std::exit(11);
  (void)counters(Device::cpu());
  (void)memory_stats(Device::cpu());
  if (Engine::get().gpus_opened()) std::exit(12);  // CPU work and CPU queries open nothing
  const std::vector<Device> all = devices();
  if (!Engine::get().gpus_opened()) std::exit(13);  // listing devices discovers the GPUs
  if (all.empty() || all.front() != Device::cpu()) std::exit(14);
  std::exit(0);
}

TEST(LazyGpus, ACpuOnlyProgramOpensNoGpuUntilOneIsAskedFor) {
  const pid_t child = test::spawn_child_test("LazyGpusChild.DISABLED_CpuWorkOpensNoGpu");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit by itself (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "expectation " << WEXITSTATUS(status) << " of the child failed";
}

}  // namespace
}  // namespace kiln
