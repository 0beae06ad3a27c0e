// devices/vulkan private: writing one of the Vulkan device's cache files (compiled kernels,
// autotune choices). Several processes share a cache directory (the test suites run side by side;
// services on one host), so a file goes through a temporary of this process and thread and a
// rename: a reader never sees half a file, and two writers never write into one temporary.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

namespace kiln::vk {

// Creates the directory when missing. On failure returns what went wrong (the cache is an
// improvement, never a requirement: callers log it and go on); on success an empty string.
std::string write_cache_file(const std::filesystem::path& file, const void* data, std::size_t bytes);

}  // namespace kiln::vk
