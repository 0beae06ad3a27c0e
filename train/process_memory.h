// The process's own memory as the operating system counts it, beside what kiln's pools hold:
// what a user compares with `top` and with the PyTorch twin of a run.
#pragma once
#include <optional>

namespace kiln::train {

// Resident memory now and at its peak so far, in MiB (none where the system does not say).
std::optional<double> resident_mib();
std::optional<double> peak_resident_mib();

}  // namespace kiln::train
