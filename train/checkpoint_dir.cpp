#include "train/checkpoint_dir.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

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

namespace {

// Reads "<digits>" at the front of `s` into `value`; false when there are none.
bool take_number(std::string_view& s, std::int64_t& value) {
  std::size_t n = 0;
  value = 0;
  while (n < s.size() && n < 18 && s[n] >= '0' && s[n] <= '9') value = value * 10 + (s[n++] - '0');
  s.remove_prefix(n);
  return n > 0;
}

bool take(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// "epoch-<e>.safetensors" or "epoch-<e>-batch-<b>.safetensors" (file_for's names).
std::optional<Progress> parse_name(std::string_view s) {
  Progress p;
  if (!take(s, "epoch-") || !take_number(s, p.epoch)) return std::nullopt;
  if (take(s, "-batch-") && !take_number(s, p.batch)) return std::nullopt;
  if (s != ".safetensors") return std::nullopt;
  return p;
}

}  // namespace

std::vector<std::pair<Progress, std::filesystem::path>> CheckpointDir::list() const {
  std::vector<std::pair<Progress, std::filesystem::path>> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (!entry.is_regular_file()) continue;
    if (const std::optional<Progress> p = parse_name(entry.path().filename().string())) out.emplace_back(*p, entry.path());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::optional<std::pair<Progress, std::filesystem::path>> CheckpointDir::latest() const {
  auto all = list();
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::filesystem::path CheckpointDir::history_for(const std::filesystem::path& checkpoint) {
  std::filesystem::path h = checkpoint;
  return h.replace_extension(".history.json");
}

void CheckpointDir::prune() const {
  const auto all = list();
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_) < all.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(all[i].second, ec);  // a file that will not go is only left behind
    std::filesystem::remove(history_for(all[i].second), ec);
  }
}

}  // namespace kiln::train
