// How the dashboard and the report write numbers and times, locale-independently (std::to_chars),
// so a program that calls setlocale() still writes "0.25", never "0,25", into an SVG.
#pragma once
#include <chrono>
#include <string>

namespace kiln::train {

// Four significant digits; from 10'000 up an SI suffix (12.3k items/s, 1.52G bytes); "NaN",
// "inf", "-inf" for non-finite values.
std::string format_metric_value(double value);
// "3.4s" under ten seconds, then "0:17", "12:34", "1:02:03"; "--:--" for a negative or non-finite duration (an unknown
// ETA).
std::string format_duration(double seconds);
// "2025-01-31 14:05:09 UTC": the report's times, the same wherever it is written.
std::string format_utc_time(std::chrono::system_clock::time_point time);
// A number with `decimals` digits after the point ("12.50"), for SVG coordinates.
std::string format_fixed(double value, int decimals);

}  // namespace kiln::train
