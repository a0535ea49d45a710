#include "pruner/measure/process_memory.h"

#include <malloc.h>

#include <fstream>
#include <sstream>
#include <string>

namespace headprune::pruner {
namespace {

/// The value of `field` ("VmRSS:", "VmHWM:") in /proc/self/status, which the kernel gives in kB.
int64_t status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) != 0) continue;
    std::istringstream values(line.substr(field.size()));
    int64_t kib = 0;
    values >> kib;
    return kib;
  }
  return 0;
}

}  // namespace

int64_t resident_bytes() { return status_kib("VmRSS:") * 1024; }

int64_t peak_resident_bytes() { return status_kib("VmHWM:") * 1024; }

bool reset_peak_resident() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace headprune::pruner
