// The end-of-run report: one self-contained HTML5 file (no scripts, fonts or network) that a
// person opens in a browser — the run's settings, its final metrics with the best epoch of each,
// and one inline SVG chart per metric with the train and valid curves (hover a point for its
// value). Every string from the user is escaped; the same input gives the same bytes.
//
//   train::write_html_report("runs/mnist/report.html", run, outcome, dashboard.history());
#pragma once
#include <filesystem>
#include <string>

#include "kiln/train/metric_history.h"
#include "kiln/train/run_info.h"

namespace kiln::train {

// Writes the report atomically: to a temporary file beside `path`, renamed over it once
// complete, so a crash or a full disk never leaves half a report (an older report stays). Throws
// kiln::Error("write_html_report", ...) naming the path when it cannot be written.
void write_html_report(const std::filesystem::path& path, const RunInfo& run, const RunOutcome& outcome,
                       const MetricHistory& history);

// The document write_html_report writes.
std::string html_report(const RunInfo& run, const RunOutcome& outcome, const MetricHistory& history);

}  // namespace kiln::train
