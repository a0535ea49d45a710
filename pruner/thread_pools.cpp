#include "pruner/thread_pools.h"

#include <sched.h>

#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/blas_kernels.h"
#include "pruner/log.h"

namespace headprune::pruner {
namespace {

int blas_pool_size() {
  using Getter = int (*)();
  for (const char* name : {"openblas_get_num_threads", "MKL_Get_Max_Threads"})
    if (auto get = blas_function<Getter>(name)) return get();
  return 0;
}

/// openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP (OpenBLAS's cblas.h).
std::string blas_threading() {
  if (auto parallel = blas_function<int (*)()>("openblas_get_parallel")) {
    switch (parallel()) {
      case 0: return "sequential";
      case 1: return "pthreads";
      case 2: return "openmp";
      default: return "";
    }
  }
  return blas_function<int (*)()>("MKL_Get_Max_Threads") ? "openmp" : "";
}

}  // namespace

bool ThreadPools::oversubscribed() const {
  return blas_threading == "pthreads" && intra_op > 1 && blas > 1;
}

std::string ThreadPools::describe() const {
  auto s = fmt::format("{} LibTorch thread{}", intra_op, intra_op == 1 ? "" : "s");
  if (blas > 0)
    s += fmt::format(", {} BLAS thread{}{}", blas, blas == 1 ? "" : "s",
                     blas_threading.empty() ? "" : fmt::format(" ({})", blas_threading));
  else
    s += ", BLAS follows LibTorch";
  return s;
}

std::string ThreadPools::describe_blas() const {
  if (blas_library.empty()) return "(inside LibTorch)";
  return blas_kernels.empty() ? blas_library : fmt::format("{} ({} kernels)", blas_library, blas_kernels);
}

nlohmann::json ThreadPools::to_json() const {
  return {{"threads", intra_op},           {"blas_threads", blas}, {"blas_threading", blas_threading},
          {"blas", blas_library},          {"blas_kernels", blas_kernels}};
}

std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const auto path = line.substr(slash);
    if (path.find("blas") != std::string::npos || path.find("libmkl") != std::string::npos)
      return path;
  }
  return "";
}

ThreadPools current_thread_pools() {
  return {torch::get_num_threads(), blas_pool_size(), blas_threading(), loaded_blas(), openblas_kernels()};
}

void set_thread_pools(int n) {
  if (n < 1) throw Error(fmt::format("thread count {} must be at least 1", n));
  const bool own_threads = blas_threading() == "pthreads";
  torch::set_num_threads(own_threads ? 1 : n);
  if (auto set = blas_function<void (*)(int)>("openblas_set_num_threads")) set(n);
  if (own_threads && n > 1)
    log::warn("OpenBLAS runs its own pthreads beside LibTorch's OpenMP pool, so LibTorch keeps 1 "
              "intra-op thread and BLAS runs {} (both at {} would oversubscribe the cores); "
              "install libopenblas0-openmp and select it (update-alternatives --config "
              "libopenblas.so.0-x86_64-linux-gnu) so both share one pool",
              n, n);
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1U, std::thread::hardware_concurrency());
}

}  // namespace headprune::pruner
