// The CPU thread pools a forward pass runs on: LibTorch's intra-op pool and the BLAS library's.
// `--threads N` sets both (README, "Threads").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace headprune::pruner {

/// What the process's CPU thread pools hold now, asked of the libraries themselves.
struct ThreadPools {
  int intra_op = 0;  ///< LibTorch intra-op threads (torch::get_num_threads())
  int blas = 0;      ///< threads of the BLAS library's pool (openblas_get_num_threads /
                     ///< MKL_Get_Max_Threads); 0 = no such library found (e.g. MKL linked into
                     ///< LibTorch, which follows the intra-op setting)
  /// How the BLAS pool runs: "openmp" (OpenBLAS's OpenMP build or MKL: the threads of LibTorch's
  /// own OpenMP pool), "pthreads" (OpenBLAS's own threads, beside LibTorch's), "sequential",
  /// or "" (not known).
  std::string blas_threading;
  std::string blas_library;  ///< BLAS shared library mapped into the process ("" if none found)
  std::string blas_kernels;  ///< OpenBLAS's kernel set (pruner/blas_kernels.h), "" if not OpenBLAS
  /// True when both pools run at once with more than one thread each on their own threads,
  /// which oversubscribes the cores (OpenBLAS pthreads beside LibTorch's OpenMP).
  bool oversubscribed() const;
  /// e.g. "2 LibTorch threads, 2 BLAS threads (openmp)".
  std::string describe() const;
  /// "/usr/lib/.../libopenblas.so.0 (SkylakeX kernels)", or "(inside LibTorch)" for MKL.
  std::string describe_blas() const;
  /// {"threads", "blas_threads", "blas_threading", "blas", "blas_kernels"}: what `bench --json`
  /// reports.
  nlohmann::json to_json() const;
};

/// The pools as they are now.
ThreadPools current_thread_pools();

/// Sets LibTorch's intra-op pool and the BLAS library's pool (OpenBLAS through
/// openblas_set_num_threads, looked up at run time; MKL through LibTorch) to `n` threads each.
/// When OpenBLAS runs its own pthreads (Debian's libopenblas0-pthread), two busy pools would
/// oversubscribe the cores: LibTorch then keeps 1 intra-op thread, BLAS gets `n`, and a warning
/// names the package that shares one pool (libopenblas0-openmp).
/// Runs at every start of the program, so it asks only what it needs (current_thread_pools()
/// reports the result). @throws headprune::Error if n < 1.
void set_thread_pools(int n);

/// CPUs this process may run on (sched_getaffinity; std::thread::hardware_concurrency if that
/// fails), at least 1: the default for `--threads`.
int usable_cpus();

/// Path of the BLAS shared library mapped into this process, from /proc/self/maps ("" if none).
std::string loaded_blas();

}  // namespace headprune::pruner
