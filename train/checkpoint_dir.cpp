#include "train/checkpoint_dir.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include "ops/error.h"

namespace kiln::train {

CheckpointDir::CheckpointDir(std::filesystem::path dir, std::int64_t keep) : dir_(std::move(dir)), keep_(keep) {
  KILN_CHECK(keep >= 1, "CheckpointDir", "keep must be at least 1, got " + std::to_string(keep));
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  KILN_CHECK(!ec, "CheckpointDir", dir_.string() + ": cannot create the folder (" + ec.message() + ")");
}

std::filesystem::path CheckpointDir::file_for(Progress at) const {
  char name[64];
  if (at.batch == 0)
    std::snprintf(name, sizeof name, "epoch-%04lld.safetensors", static_cast<long long>(at.epoch));
  else
    std::snprintf(name, sizeof name, "epoch-%04lld-batch-%06lld.safetensors", static_cast<long long>(at.epoch),
                  static_cast<long long>(at.batch));
  return dir_ / name;
}

std::vector<std::pair<Progress, std::filesystem::path>> CheckpointDir::list() const {
  static const std::regex pattern(R"(epoch-(\d+)(?:-batch-(\d+))?\.safetensors)");
  std::vector<std::pair<Progress, std::filesystem::path>> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !std::regex_match(name, m, pattern)) continue;
    Progress p{std::stoll(m[1].str()), m[2].matched ? std::stoll(m[2].str()) : 0};
    out.emplace_back(p, entry.path());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::optional<std::pair<Progress, std::filesystem::path>> CheckpointDir::latest() const {
  auto all = list();
  if (all.empty()) return std::nullopt;
  return all.back();
}

void CheckpointDir::prune() const {
  const auto all = list();
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_) < all.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(all[i].second, ec);  // a file that will not go is only left behind
  }
}

}  // namespace kiln::train
