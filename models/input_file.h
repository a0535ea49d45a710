// Opening a file the user named, with an error that says which of the usual things is wrong.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace headprune::models {

/// Opens `file` for binary reading. `what` names its role in messages ("corpus", "STS file").
/// @throws headprune::Error "WHAT FILE: no such file", "WHAT FILE is a folder, not a file", or
///         "cannot open WHAT FILE for reading (permissions?)".
std::ifstream open_input_file(const std::filesystem::path& file, const std::string& what);

/// The whole content of `file`, opened as open_input_file does (same errors).
std::string read_input_file(const std::filesystem::path& file, const std::string& what);

}  // namespace headprune::models
