// Pieces of the HTML report: escaping user text for markup, and one metric's SVG chart.
#pragma once
#include <string>
#include <string_view>

#include "kiln/train/metric_history.h"

namespace kiln::train::detail {

// Text safe in element content and in quoted attributes, in HTML and in XML alike: & < > " '
// become entities, control characters that XML forbids and bytes that are not UTF-8 become
// U+FFFD, so a metric named "<script>" or a setting holding binary junk cannot break the file.
std::string escape_markup(std::string_view text);

// The figure for one metric: an <svg> with axes, ticks, a legend, a polyline per split that has
// finite values (data-split, data-points), markers with hover titles when there are few points,
// the best epoch ringed, and a caption (which way is better, values not drawn).
std::string svg_metric_figure(const MetricHistory& history, const std::string& metric, int index);

}  // namespace kiln::train::detail
