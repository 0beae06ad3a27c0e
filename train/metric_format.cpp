#include "kiln/train/metric_format.h"

#include <charconv>
#include <cmath>
#include <ctime>

namespace kiln::train {

namespace {

std::string to_chars_string(double value, std::chars_format format, int precision) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value, format, precision);
  return error == std::errc() ? std::string(buffer, end) : std::string("?");
}

std::string two_digits(long long n) {
  std::string digits = std::to_string(n);
  if (digits.size() < 2) digits.insert(digits.begin(), '0');
  return digits;
}

}  // namespace

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  static constexpr const char* kSuffixes[] = {"k", "M", "G", "T", "P"};
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e4) {
    int power = 0;
    double scaled = value;
    while (std::fabs(scaled) >= 1e3 && power < 5) {
      scaled /= 1e3;
      ++power;
    }
    // Three significant digits read best with a suffix: 12.3k, 456k, 1.52G.
    return to_chars_string(scaled, std::chars_format::general, 3) + kSuffixes[power - 1];
  }
  return to_chars_string(value, std::chars_format::general, 4);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9) return "--:--";
  // Short phases (a validation pass, a test run) would all read "0:00".
  if (seconds < 9.95) return to_chars_string(seconds, std::chars_format::fixed, 1) + "s";
  const long long total = std::llround(seconds);
  const long long hours = total / 3600, minutes = total / 60 % 60, secs = total % 60;
  std::string text = std::to_string(hours > 0 ? hours : minutes);
  if (hours > 0) text.append(":").append(two_digits(minutes));
  return text.append(":").append(two_digits(secs));
}

std::string format_utc_time(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return buffer;
}

std::string format_fixed(double value, int decimals) {
  // A value that rounds to zero is written "0.00", never "-0.00".
  if (std::fabs(value) < 0.5 * std::pow(10.0, -decimals)) value = 0;
  return to_chars_string(value, std::chars_format::fixed, decimals);
}

}  // namespace kiln::train
