// Error types shared by every layer of headprune.
//
// The command-line front end maps them to exit codes (docs/cli.md):
//   headprune::UsageError  -> exit 2 (the command line itself is wrong)
//   any other std::exception -> exit 1 (bad input file, impossible request, ...)
#pragma once

#include <stdexcept>
#include <string>

namespace headprune {

/// A failure caused by input data or a request that cannot be met. The message names
/// the file / key / tensor at fault and, where possible, what the user can do about it.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// The command line is malformed (unknown option, missing argument, bad combination).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

}  // namespace headprune
