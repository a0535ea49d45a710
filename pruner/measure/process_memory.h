// The process's resident memory (Linux /proc), for `bench-training`'s memory columns.
#pragma once

#include <cstdint>

namespace headprune::pruner {

/// Resident set size now (VmRSS of /proc/self/status), bytes; 0 where /proc is not readable.
int64_t resident_bytes();

/// Peak resident set size since the process started or since the last reset_peak_resident()
/// (VmHWM of /proc/self/status), bytes; 0 where /proc is not readable.
int64_t peak_resident_bytes();

/// Returns freed heap memory to the system (malloc_trim) and restarts the peak: writes "5" to
/// /proc/self/clear_refs (Linux >= 4.0, proc(5)). Returns false where the peak cannot be reset;
/// peak_resident_bytes() then still counts from the process's start.
bool reset_peak_resident();

}  // namespace headprune::pruner
