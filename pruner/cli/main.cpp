// headprune: find and remove unneeded attention heads of a transformer checkpoint.
#include <exception>

#include "pruner/blas_kernels.h"
#include "pruner/cli/command.h"

int main(int argc, char** argv) {
  std::set_terminate(headprune::cli::report_uncaught_exception);
  headprune::pruner::restart_with_better_openblas_kernels(argv);
  return headprune::cli::run(argc, argv);
}
