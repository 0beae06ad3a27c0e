#include "kiln/devices/vulkan/vk_shader.h"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <chrono>
#include <mutex>
#include <sstream>

#include "kiln/devices/vulkan/vk_spirv_coop.h"
#include "kiln/base/error.h"
#include "kiln/base/log.h"

namespace kiln::vk {

namespace {

std::string numbered(const std::string& source) {
  std::istringstream in(source);
  std::string line, out;
  for (int n = 1; std::getline(in, line); ++n) out += std::to_string(n) + ": " + line + '\n';
  return out;
}

}  // namespace

std::vector<std::uint32_t> compile_glsl(const std::string& kernel_name, const std::string& source,
                                        SpirvOptimizer optimizer) {
  // glslang's process-wide state is made once; after that each thread compiles with its own
  // TShader and thread-local pool allocator (glslang guards its shared symbol tables), so the
  // autotuner's candidates compile on several threads at once (vk_parallel_compile.h).
  static std::once_flag init;
  std::call_once(init, [] { glslang::InitializeProcess(); });
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const auto started = Clock::now();

  glslang::TShader shader(EShLangCompute);
  const char* text = source.c_str();
  shader.setStrings(&text, 1);
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  if (!shader.parse(GetDefaultResources(), 460, false, messages))
    throw Error(kernel_name, "GLSL compile failed:\n" + std::string(shader.getInfoLog()) + "\n" + numbered(source));
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages))
    throw Error(kernel_name, "GLSL link failed:\n" + std::string(program.getInfoLog()));

  std::vector<std::uint32_t> spirv;
  spv::SpvBuildLogger spv_log;
  glslang::SpvOptions options;
  options.disableOptimizer = true;  // SPIRV-Tools runs below, with its performance passes
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &spv_log, &options);

  const double glsl_ms = ms_since(started);
  const auto optimizing = Clock::now();

  std::string tool_log;
  auto consumer = [&tool_log](spv_message_level_t, const char*, const spv_position_t& pos, const char* m) {
    tool_log += "  at word " + std::to_string(pos.index) + ": " + m + '\n';
  };
  std::vector<std::uint32_t> optimized;
  if (optimizer == SpirvOptimizer::none) {
    optimized = spirv;
  } else {
    spvtools::Optimizer opt(SPV_ENV_VULKAN_1_2);
    opt.SetMessageConsumer(consumer);
    opt.RegisterPerformancePasses();
    if (!opt.Run(spirv.data(), spirv.size(), &optimized)) {
      // The optimizer is an improvement, not a requirement.
      if (log_enabled(spdlog::level::warn)) logger().warn("{}: SPIR-V optimizer failed, using unoptimized code:\n{}", kernel_name, tool_log);
      optimized = spirv;
      tool_log.clear();
    }
  }
  const double optimize_ms = ms_since(optimizing);
  if (log_enabled(spdlog::level::debug))
    logger().debug("{}: GLSL to SPIR-V {:.1f} ms, SPIR-V optimizer {:.1f} ms ({} -> {} words)", kernel_name, glsl_ms,
                   optimize_ms, spirv.size(), optimized.size());
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  tools.SetMessageConsumer(consumer);
  if (!tools.Validate(optimized))
    throw Error(kernel_name, "generated SPIR-V does not validate:\n" + tool_log + numbered(source));
  if (source.find(kKhrCooperativeMatrixMarker) != std::string::npos) {
    CoopRewrite rewrite;
    rewrite.tensor_loads = source.find(kTensorLoadsMarker) != std::string::npos;
    rewrite.bf16_matrices = source.find(kBf16MatricesMarker) != std::string::npos;
    return nv_to_khr_cooperative_matrix(optimized, rewrite);
  }
  return optimized;
}

}  // namespace kiln::vk
