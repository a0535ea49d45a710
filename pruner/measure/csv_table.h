// Reading a comma-separated file (RFC 4180: quoted fields, doubled quotes, line breaks inside
// quotes) with libcsv, the Debian-packaged C library, for the Hugging Face-style CSV exports of
// evaluation sets (e.g. STS-B with a `sentence1,sentence2,score` header).
#pragma once

#include <string>
#include <vector>

namespace headprune::pruner {

/// Every record of the CSV `text`, each a list of fields (quotes removed). Empty lines are
/// skipped. @throws headprune::Error if it is not well-formed CSV (an unterminated quote),
/// naming `name` (the file).
std::vector<std::vector<std::string>> parse_csv(const std::string& text, const std::string& name);

/// The tab-separated fields of one line (no quoting: TSV as STS Benchmark and CoNLL-U write it);
/// n tabs give n + 1 fields, empty ones included.
std::vector<std::string> split_tabs(const std::string& line);

}  // namespace headprune::pruner
