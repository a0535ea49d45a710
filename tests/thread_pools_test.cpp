// --threads and the BLAS library: both pools set, reported as they are, and OpenBLAS running
// kernels as new as the CPU supports (pruner/thread_pools.h, pruner/blas_kernels.h).
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>

#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/blas_kernels.h"
#include "pruner/thread_pools.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"

using namespace headprune;

namespace {

/// stdout of `command` run by the shell.
std::string output_of(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
    ::pclose(pipe);
  }
  return out;
}

}  // namespace

CATCH_TEST_CASE("set_thread_pools sets LibTorch's pool and OpenBLAS's, and reports them", "[threads]") {
  pruner::set_thread_pools(3);
  const auto pools = pruner::current_thread_pools();
  if (pools.blas_threading == "pthreads") {
    // Two busy pools would oversubscribe the cores: LibTorch keeps 1.
    CATCH_CHECK(pools.intra_op == 1);
  } else {
    CATCH_CHECK(pools.intra_op == 3);
  }
  CATCH_CHECK(torch::get_num_threads() == pools.intra_op);
  if (!pools.blas_kernels.empty()) CATCH_CHECK(pools.blas == 3);  // OpenBLAS (MKL follows LibTorch)
  CATCH_CHECK_FALSE(pools.oversubscribed());
  CATCH_CHECK_THROWS_AS(pruner::set_thread_pools(0), Error);
  CATCH_CHECK(pruner::usable_cpus() >= 1);
}

CATCH_TEST_CASE("OMP_NUM_THREADS sets the default and a bad value is a usage error", "[threads][cli]") {
  testing::Workspace w("threads");
  ::setenv("OMP_NUM_THREADS", "1", 1);
  CATCH_CHECK(testing::run_cli({"inspect", w.model.string()}) == 0);
  CATCH_CHECK(torch::get_num_threads() == 1);
  ::setenv("OMP_NUM_THREADS", "two", 1);
  CATCH_CHECK(testing::run_cli({"inspect", w.model.string()}) == 2);
  CATCH_CHECK(testing::run_cli({"--threads", "2", "inspect", w.model.string()}) == 0);  // --threads wins
  ::unsetenv("OMP_NUM_THREADS");
}

CATCH_TEST_CASE("headprune runs OpenBLAS kernels as new as the CPU supports, or the ones the user set",
                "[threads][blas]") {
  const std::string binary = HEADPRUNE_BINARY;
  const std::regex kernels_re("OpenBLAS (\\w+) kernels");
  std::smatch m;
  const auto chosen = output_of("env -u OPENBLAS_CORETYPE " + binary + " --version");
  if (!std::regex_search(chosen, m, kernels_re)) {
    CATCH_CHECK(pruner::openblas_kernels().empty());  // no OpenBLAS here (MKL inside LibTorch)
    return;
  }
  CATCH_INFO("headprune --version: " << chosen);
  // On Debian 12's OpenBLAS 0.3.21 and a CPU newer than it knows it would be Prescott here.
  CATCH_CHECK(pruner::better_coretype_than(m[1]).empty());
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const auto kept = output_of("OPENBLAS_CORETYPE=Haswell " + binary + " --version");
    CATCH_CHECK(kept.find("OpenBLAS Haswell kernels") != std::string::npos);
  }
  CATCH_CHECK(pruner::better_coretype_than("Prescott") ==
              (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")
                   ? "SkylakeX"
                   : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "Haswell" : ""));
  CATCH_CHECK(pruner::better_coretype_than("SkylakeX").empty());
}
