// headprune: find and remove unneeded attention heads of a transformer checkpoint.
#include "pruner/cli/command.h"

int main(int argc, char** argv) { return headprune::cli::run(argc, argv); }
