// Keeps a dashboard's view alive while the training thread waits: a thread that asks it to
// redraw a few times a second (Dashboard::tick), so the elapsed time and the ETA move on through
// a long step, a slow read or a checkpoint being written, and a frozen view means a stuck run.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kiln/train/dashboard.h"

namespace kiln::train {

class DashboardTicker {
 public:
  DashboardTicker(Dashboard& dashboard, std::chrono::milliseconds interval);
  ~DashboardTicker();  // stops the thread (at once: it does not wait out an interval)
  DashboardTicker(const DashboardTicker&) = delete;
  DashboardTicker& operator=(const DashboardTicker&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: started once the members it uses exist
};

}  // namespace kiln::train
