// The pipeline cache and the shader compiler on their own (devices/vulkan private classes).
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "kiln/devices/vulkan/vk_parallel_compile.h"
#include "kiln/devices/vulkan/vk_pipeline_cache.h"
#include "kiln/devices/vulkan/vk_shader.h"
#include "vulkan_test_support.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

const char* kKernel = R"(#version 460
layout(local_size_x = 64) in;
layout(push_constant) uniform P { uint64_t args; uint64_t flag; } p;
void main() {}
)";

std::string kernel_source() {
  return std::string("#version 460\n#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n") +
         (kKernel + std::string(kKernel).find('\n') + 1);
}

class PipelineCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KILN_REQUIRE_VULKAN();
    auto instance = vk::Instance::get();
    const int best = vk::best_device_index(instance->devices());
    ASSERT_GE(best, 0);
    ctx_ = std::make_unique<vk::Context>(instance, instance->devices()[best]);
    dir_ = fs::temp_directory_path() / ("kiln-cache-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::unique_ptr<vk::Context> ctx_;
  fs::path dir_;
};

TEST_F(PipelineCacheTest, SecondProcessLoadsFromDisk) {
  int generated = 0;
  auto source = [&] {
    ++generated;
    return kernel_source();
  };
  {
    vk::PipelineCache cache(*ctx_, dir_.string());
    cache.get("test/noop", "noop", source);
    cache.get("test/noop", "noop", source);
    EXPECT_EQ(cache.stats().compiles, 1u);
    EXPECT_EQ(cache.stats().memory_hits, 1u);
    EXPECT_EQ(generated, 1);
  }
  EXPECT_TRUE(fs::exists(dir_));
  {
    vk::PipelineCache fresh(*ctx_, dir_.string());
    fresh.get("test/noop", "noop", source);
    EXPECT_EQ(fresh.stats().compiles, 0u);
    EXPECT_EQ(fresh.stats().disk_hits, 1u);
  }
  // An unwritable directory only costs the disk cache.
  vk::PipelineCache nowhere(*ctx_, "/proc/kiln-cannot-write-here");
  nowhere.get("test/noop", "noop", source);
  EXPECT_EQ(nowhere.stats().compiles, 1u);
}

// The autotuner's candidates compile in the background: a job is queued by its first ready()
// (false), made on the compiler's thread, then ready; its sources were taken as text when it
// was queued (the captured counter is gone by the time they compile); a compiler destroyed with
// jobs queued drops them and returns.
TEST_F(PipelineCacheTest, BackgroundJobsCompileOnceAndReportReady) {
  auto cache = std::make_shared<vk::PipelineCache>(*ctx_, "-");
  auto requests = [] {
    std::vector<vk::KernelRequest> r;
    for (int i = 0; i < 3; ++i) {
      auto count = std::make_shared<int>(i);  // released when the request is: sources must not need it later
      r.push_back({"test/background/" + std::to_string(i), "noop",
                   [count] { return kernel_source() + "// " + std::to_string(*count) + "\n"; }});
    }
    return r;
  };
  {
    vk::BackgroundCompiler compiler(cache);
    EXPECT_FALSE(compiler.ready("job", requests));
    compiler.wait_idle();
    EXPECT_TRUE(compiler.ready("job", requests));
    EXPECT_EQ(cache->stats().compiles, 3u);
    cache->get("test/background/1", "noop", [] { return std::string("not compiled: in memory"); });
    EXPECT_EQ(cache->stats().memory_hits, 1u);
    EXPECT_EQ(cache->stats().compiles, 3u);
  }
  vk::BackgroundCompiler dropped(std::make_shared<vk::PipelineCache>(*ctx_, "-"));
  for (int job = 0; job < 4; ++job) EXPECT_FALSE(dropped.ready("job " + std::to_string(job), requests));
}

// KILN_SPIRV_OPTIMIZE set (or unset) for one scope.
class OptimizeSetting {
 public:
  explicit OptimizeSetting(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    if (value) ::setenv(kName, value, 1);
    else ::unsetenv(kName);
  }
  ~OptimizeSetting() {
    if (old_) ::setenv(kName, old_->c_str(), 1);
    else ::unsetenv(kName);
  }

 private:
  static constexpr const char* kName = "KILN_SPIRV_OPTIMIZE";
  std::optional<std::string> old_;
};

std::size_t spirv_files(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) n += entry.path().extension() == ".spv";
  return n;
}

TEST_F(PipelineCacheTest, SpirvOptimizerRunsOnlyWhenAskedFor) {
  {
    const OptimizeSetting unset(nullptr);
    EXPECT_EQ(vk::PipelineCache(*ctx_, "-").optimizer(), vk::SpirvOptimizer::none) << ctx_->info().name;
  }
  {
    const OptimizeSetting on("1");
    EXPECT_EQ(vk::PipelineCache(*ctx_, "-").optimizer(), vk::SpirvOptimizer::performance);
  }
  const OptimizeSetting off("0");
  EXPECT_EQ(vk::PipelineCache(*ctx_, "-").optimizer(), vk::SpirvOptimizer::none);
}

TEST_F(PipelineCacheTest, OptimizedAndUnoptimizedSpirvAreKeptApart) {
  auto source = [] { return kernel_source(); };
  {
    const OptimizeSetting on("1");
    vk::PipelineCache cache(*ctx_, dir_.string());
    cache.get("test/noop", "noop", source);
    EXPECT_EQ(cache.stats().compiles, 1u);
  }
  {
    // The other setting does not load the first one's SPIR-V.
    const OptimizeSetting off("0");
    vk::PipelineCache cache(*ctx_, dir_.string());
    cache.get("test/noop", "noop", source);
    EXPECT_EQ(cache.stats().compiles, 1u);
    EXPECT_EQ(cache.stats().disk_hits, 0u);
  }
  EXPECT_EQ(spirv_files(dir_), 2u);
  for (const char* setting : {"1", "0"}) {
    const OptimizeSetting again(setting);
    vk::PipelineCache cache(*ctx_, dir_.string());
    cache.get("test/noop", "noop", source);
    EXPECT_EQ(cache.stats().compiles, 0u) << setting;
    EXPECT_EQ(cache.stats().disk_hits, 1u) << setting;
  }
}

TEST_F(PipelineCacheTest, CompileErrorNamesTheKernel) {
  vk::PipelineCache cache(*ctx_, "-");
  try {
    cache.get("test/broken", "broken_kernel", [] { return std::string("#version 460\nvoid main() { undefined_thing(); }\n"); });
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "broken_kernel");
    EXPECT_NE(std::string(e.what()).find("undefined_thing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::test
