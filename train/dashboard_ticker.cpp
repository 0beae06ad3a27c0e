#include "kiln/train/dashboard_ticker.h"

namespace kiln::train {

DashboardTicker::DashboardTicker(Dashboard& dashboard, std::chrono::milliseconds interval)
    : thread_([this, &dashboard, interval](std::stop_token stop) {
        std::unique_lock lock(mutex_);
        for (;;) {
          // Returns after the interval, or at once when a stop is requested (the predicate never
          // holds: only the stop or the time ends the wait).
          wake_.wait_for(lock, stop, interval, [] { return false; });
          if (stop.stop_requested()) return;
          lock.unlock();
          dashboard.tick();
          lock.lock();
        }
      }) {}

DashboardTicker::~DashboardTicker() {
  thread_.request_stop();
  thread_.join();
}

}  // namespace kiln::train
