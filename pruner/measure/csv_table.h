// Reading a comma-separated file (RFC 4180: quoted fields, doubled quotes, line breaks inside
// quotes) with libcsv, the Debian-packaged C library, for the Hugging Face-style CSV exports of
// evaluation sets (e.g. STS-B with a `sentence1,sentence2,score` header).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace headprune::pruner {

/// Every record of `file`, each a list of fields (quotes removed). Empty lines are skipped.
/// @throws headprune::Error if the file cannot be opened or is not well-formed CSV (an
///         unterminated quote), naming the file.
std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& file);

/// The same for CSV text already in memory; `name` labels the errors.
std::vector<std::vector<std::string>> parse_csv(const std::string& text, const std::string& name);

}  // namespace headprune::pruner
