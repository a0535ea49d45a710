#include "models/input_file.h"

#include <sstream>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {

std::ifstream open_input_file(const std::filesystem::path& file, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw Error(fmt::format("{} {}: no such file", what, file.string()));
  if (std::filesystem::is_directory(file, ec))
    throw Error(fmt::format("{} {} is a folder, not a file", what, file.string()));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open {} {} for reading (permissions?)", what, file.string()));
  return in;
}

std::string read_input_file(const std::filesystem::path& file, const std::string& what) {
  auto in = open_input_file(file, what);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace headprune::models
