// A run's metric history as a JSON file beside each checkpoint, so that a resumed run's
// dashboard and report show the whole run, not only the epochs after the resume. Values that
// are not finite (a diverged loss) are written as "nan", "inf" and "-inf".
#pragma once
#include <filesystem>

#include "kiln/train/metric_history.h"

namespace kiln::train {

// Writes `history` to `file` (a temporary file flushed to disk and renamed into place: never half
// a file).
void save_history(const MetricHistory& history, const std::filesystem::path& file);
// Reads a file save_history wrote; throws kiln::Error naming the file and what is wrong.
MetricHistory load_history(const std::filesystem::path& file);

}  // namespace kiln::train
