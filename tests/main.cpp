// Catch2 v2 entry point (one per test binary). Like headprune's main(), it restarts itself with
// OPENBLAS_CORETYPE set where Debian's OpenBLAS fell back to kernels older than the CPU's
// (pruner/blas_kernels.h), so the tests run the kernels the program runs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "pruner/blas_kernels.h"

int main(int argc, char** argv) {
  headprune::pruner::restart_with_better_openblas_kernels(argv);
  return Catch::Session().run(argc, argv);
}
