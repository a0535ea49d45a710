#include "pruner/blas_kernels.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>

namespace headprune::pruner {

std::string openblas_kernels() {
  auto corename = blas_function<const char* (*)()>("openblas_get_corename");
  const char* name = corename ? corename() : nullptr;
  return name ? name : "";
}

std::string better_openblas_coretype() {
  const char* chosen_by_user = std::getenv("OPENBLAS_CORETYPE");
  if (chosen_by_user && *chosen_by_user) return "";
  return better_coretype_than(openblas_kernels());
}

std::string better_coretype_than(const std::string& kernels) {
  // OpenBLAS's x86-64 kernel sets older than Haswell (its fallbacks for CPUs it does not know).
  constexpr std::array<std::string_view, 8> kOlder = {"Prescott", "Core2", "Penryn", "Dunnington",
                                                      "Nehalem", "Atom", "Sandybridge", "Barcelona"};
  if (std::find(kOlder.begin(), kOlder.end(), kernels) == kOlder.end()) return "";
  // __builtin_cpu_supports checks the OS saves the AVX / AVX-512 registers too (XCR0).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

void restart_with_better_openblas_kernels(char** argv) {
  const auto coretype = better_openblas_coretype();
  if (coretype.empty()) return;
  if (setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");  // the restart failed: run on with the kernels loaded
}

}  // namespace headprune::pruner
