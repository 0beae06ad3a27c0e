#include "kiln/train/checkpoint_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <tuple>

#include "kiln/base/error.h"

namespace kiln::train {

namespace fs = std::filesystem;

CheckpointDir::CheckpointDir(fs::path dir, std::int64_t keep) : dir_(std::move(dir)), keep_(keep) {
  KILN_CHECK(keep >= 1, "CheckpointDir", "keep must be at least 1, got " + std::to_string(keep));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  KILN_CHECK(!ec, "CheckpointDir", dir_.string() + ": cannot create the folder (" + ec.message() + ")");
}

fs::path CheckpointDir::folder_for(Progress at) const {
  char name[64];
  if (at.batch == 0)
    std::snprintf(name, sizeof name, "epoch-%04lld", static_cast<long long>(at.epoch));
  else
    std::snprintf(name, sizeof name, "epoch-%04lld-batch-%06lld", static_cast<long long>(at.epoch),
                  static_cast<long long>(at.batch));
  return dir_ / name;
}

std::function<void(CommitPoint)>& CheckpointDir::commit_hook() {
  static std::function<void(CommitPoint)> hook;
  return hook;
}

namespace {

constexpr std::string_view kTemporaryMark = ".tmp-";
constexpr std::string_view kLegacySuffix = ".safetensors";
constexpr std::string_view kLegacyHistorySuffix = ".history.json";

std::atomic<unsigned> g_commits{0};

void reached(CommitPoint point) {
  if (const auto& hook = CheckpointDir::commit_hook()) hook(point);
}

// Flushes a folder's entries (a rename into it) to disk. Some file systems cannot fsync a
// folder: that is no reason to fail a checkpoint.
void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

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

// "epoch-<e>" or "epoch-<e>-batch-<b>" (folder_for's names) followed by exactly `suffix`.
std::optional<Progress> parse_name(std::string_view s, std::string_view suffix) {
  Progress p;
  if (!take(s, "epoch-") || !take_number(s, p.epoch)) return std::nullopt;
  if (take(s, "-batch-") && !take_number(s, p.batch)) return std::nullopt;
  if (s != suffix) return std::nullopt;
  return p;
}

// A temporary name (".<name>.tmp-<pid>-<n>") of a process that cannot be writing it any more:
// one that is gone, or this one, which cleans up only as a run starts.
bool is_stale_temporary(std::string_view name) {
  if (name.empty() || name[0] != '.') return false;
  const std::size_t mark = name.rfind(kTemporaryMark);
  if (mark == std::string_view::npos) return false;
  std::string_view rest = name.substr(mark + kTemporaryMark.size());
  std::int64_t pid = 0;
  if (!take_number(rest, pid)) return false;
  if (pid == ::getpid()) return true;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Puts `from` at `to`, replacing a folder there: swapped in one step where the system can
// (renameat2), else the old one moved aside first. What ends up at `from` is the old folder.
void rename_over(const fs::path& from, const fs::path& to, const fs::path& aside) {
  if (::rename(from.c_str(), to.c_str()) == 0) return;
  if (errno != ENOTEMPTY && errno != EEXIST) {
    throw Error("CheckpointDir",
                to.string() + ": cannot rename " + from.filename().string() + " into place: " + std::strerror(errno));
  }
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
    fs::rename(from, aside);
    return;
  }
  fs::rename(to, aside);
  fs::rename(from, to);
}

}  // namespace

fs::path CheckpointDir::commit(Progress at, const Files& files) const {
  const fs::path target = folder_for(at);
  const std::string temporary_prefix =
      "." + target.filename().string() + std::string(kTemporaryMark) + std::to_string(::getpid()) + "-";
  const unsigned n = g_commits.fetch_add(2);
  const fs::path temporary = dir_ / (temporary_prefix + std::to_string(n));
  const fs::path aside = dir_ / (temporary_prefix + std::to_string(n + 1));
  std::error_code ec;
  fs::create_directory(temporary, ec);
  KILN_CHECK(!ec, "CheckpointDir", temporary.string() + ": cannot create the folder (" + ec.message() + ")");
  try {
    reached(CommitPoint::folder_made);
    files.checkpoint(temporary / kCheckpointFile);
    reached(CommitPoint::checkpoint_written);
    files.history(temporary / kHistoryFile);
    reached(CommitPoint::history_written);
    files.state(temporary / kStateFile);
    sync_folder(temporary);
    reached(CommitPoint::state_written);
    rename_over(temporary, target, aside);
  } catch (...) {
    fs::remove_all(temporary, ec);
    throw;
  }
  sync_folder(dir_);
  reached(CommitPoint::renamed);
  fs::remove_all(aside, ec);  // the checkpoint this one replaced, if any
  return target / kCheckpointFile;
}

std::vector<std::pair<Progress, fs::path>> CheckpointDir::list() const {
  // (progress, 0 for an older run's file and 1 for a folder: the folder wins a tie, path)
  std::vector<std::tuple<Progress, int, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory()) {
      if (const std::optional<Progress> p = parse_name(name, "");
          p && fs::is_regular_file(entry.path() / kCheckpointFile))
        found.emplace_back(*p, 1, entry.path() / kCheckpointFile);
    } else if (entry.is_regular_file()) {
      if (const std::optional<Progress> p = parse_name(name, kLegacySuffix)) found.emplace_back(*p, 0, entry.path());
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) < std::get<0>(b) || (std::get<0>(a) == std::get<0>(b) && std::get<1>(a) < std::get<1>(b));
  });
  std::vector<std::pair<Progress, fs::path>> out;
  for (auto& [p, kind, path] : found) out.emplace_back(p, std::move(path));
  return out;
}

std::optional<std::pair<Progress, fs::path>> CheckpointDir::latest() const {
  auto all = list();
  if (all.empty()) return std::nullopt;
  return all.back();
}

fs::path CheckpointDir::history_for(const fs::path& checkpoint) {
  if (checkpoint.filename() == kCheckpointFile) return checkpoint.parent_path() / kHistoryFile;
  fs::path h = checkpoint;
  return h.replace_extension(kLegacyHistorySuffix);
}

std::optional<fs::path> CheckpointDir::state_for(const fs::path& checkpoint) {
  if (checkpoint.filename() == kCheckpointFile) return checkpoint.parent_path() / kStateFile;
  return std::nullopt;
}

void CheckpointDir::prune() const {
  const auto all = list();
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_) < all.size(); ++i) {
    std::error_code ec;  // a file that will not go is only left behind
    if (all[i].second.filename() == kCheckpointFile) {
      fs::remove_all(all[i].second.parent_path(), ec);
    } else {
      fs::remove(all[i].second, ec);
      fs::remove(history_for(all[i].second), ec);
    }
  }
}

std::vector<std::string> CheckpointDir::clean_up() const {
  std::vector<fs::directory_entry> entries;  // listed first: removing while listing may skip some
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) entries.push_back(entry);
  std::vector<std::string> removed;
  for (const fs::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    bool stale = is_stale_temporary(name) || name.ends_with(".history.json.tmp");
    // An older run's history whose checkpoint is gone (killed between the two renames, or pruned).
    if (!stale && entry.is_regular_file() && parse_name(name, kLegacyHistorySuffix)) {
      const std::string stem = name.substr(0, name.size() - kLegacyHistorySuffix.size());
      stale = !fs::exists(dir_ / (stem + std::string(kLegacySuffix)));
    }
    if (!stale) continue;
    std::error_code remove_error;
    fs::remove_all(entry.path(), remove_error);
    if (!remove_error) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace kiln::train
