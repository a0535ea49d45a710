// Which kernels OpenBLAS runs. Debian 12's OpenBLAS 0.3.21 picks its kernels by CPU model and
// falls back to its oldest x86-64 ones (Prescott: SSE3) on CPUs newer than it knows, such as
// Intel's model 207 (Emerald Rapids): matrix products then run ~2.7× slower than with the
// AVX-512 kernels the CPU supports (docs/results.md, "Threads and OpenBLAS kernels"). OpenBLAS
// reads the choice (OPENBLAS_CORETYPE) only when it loads, so headprune's main() starts itself
// again with it set.
#pragma once

#include <dlfcn.h>

#include <string>

namespace headprune::pruner {

/// A function of the BLAS library mapped into the process, looked up by name at run time so that
/// headprune links no BLAS itself (nullptr when no loaded library has it).
template <typename Fn>
Fn blas_function(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

/// The kernel set the loaded OpenBLAS runs (openblas_get_corename, e.g. "SkylakeX", "Haswell",
/// "Prescott"); "" when no OpenBLAS is loaded (MKL inside a PyPI LibTorch).
std::string openblas_kernels();

/// The OPENBLAS_CORETYPE this CPU deserves when `kernels` is one of OpenBLAS's x86-64 kernel sets
/// older than Haswell: "SkylakeX" (the CPU and OS support AVX-512 F/BW/DQ/VL) or "Haswell" (AVX2
/// and FMA); "" when `kernels` is as good or not one of those, or the CPU supports neither.
std::string better_coretype_than(const std::string& kernels);

/// The OPENBLAS_CORETYPE this process should have been started with:
/// better_coretype_than(openblas_kernels()), or "" when no OpenBLAS is loaded or when
/// OPENBLAS_CORETYPE is already set (the user's choice, kept).
std::string better_openblas_coretype();

/// If better_openblas_coretype() names one, sets OPENBLAS_CORETYPE to it and replaces this process
/// with a fresh start of the same program and arguments (/proc/self/exe); returns only when
/// there is nothing to do or the restart failed (the program then runs on as it is).
void restart_with_better_openblas_kernels(char** argv);

}  // namespace headprune::pruner
