// A compiled PCRE2 regular expression over UTF-8 text (Debian libpcre2-dev, 8-bit library),
// for the byte-level BPE pre-tokenizers: \p{L}, \p{N}, \s are Unicode classes
// (PCRE2_UTF | PCRE2_UCP), so no Unicode tables live in headprune.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace headprune::models {

class Pcre2Regex {
 public:
  /// Compiles `pattern` (or, with `literal`, matches it as plain text) in UTF + UCP mode, with
  /// PCRE2's JIT where available. @throws headprune::Error naming `source`, the pattern and
  /// PCRE2's message with the offset of the fault.
  Pcre2Regex(const std::string& pattern, bool literal, const std::string& source);

  /// Every non-overlapping match of the pattern in `text` (valid UTF-8, not checked again) as
  /// [begin, end) byte offsets, left to right; after an empty match the search moves on one
  /// character, as Rust's / Oniguruma's find_iter do.
  /// @throws headprune::Error if matching fails (e.g. PCRE2's match limit).
  std::vector<std::pair<std::size_t, std::size_t>> find_all(const std::string& text) const;

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<const Code> code_;  ///< shared: the tokenizer is copyable
};

}  // namespace headprune::models
