// Running the command line in-process, as a user would type it, for the CLI tests.
#pragma once

#include <string>
#include <vector>

#include "pruner/cli/command.h"

namespace headprune::testing {

/// `headprune ARGS...`; returns the exit code (0 ok, 1 error, 2 usage).
inline int run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "headprune");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return cli::run(static_cast<int>(argv.size()), argv.data());
}

}  // namespace headprune::testing
