// Added tokens of HF tokenizers (`AddedVocabulary`): strings matched verbatim in the text
// before anything else runs, each becoming one id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headprune::models {

/// One entry of tokenizer.json's "added_tokens" (HF `AddedToken`).
struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool single_word = false;  ///< refused when true (not implemented)
  bool lstrip = false;       ///< the match swallows the White_Space before it
  bool rstrip = false;       ///< ... and after it
  bool normalized = false;   ///< matched in the normalized (NFC) text rather than the raw one
  bool special = false;      ///< a control token: skipped by decode(skip_special_tokens)

  /// @throws headprune::Error naming `source` on a malformed entry or single_word true.
  static AddedToken from_json(const nlohmann::json& token, const std::string& source);
  nlohmann::json to_json() const;
};

/// A stretch of text: an added token (`id` >= 0) or plain text (`id` == -1) in [begin, end).
struct TextSegment {
  std::size_t begin = 0, end = 0;
  int64_t id = -1;
};

/// Finds added tokens in text as HF's AddedVocabulary does: at each position the leftmost,
/// longest matching token (Aho-Corasick LeftmostLongest, non-overlapping); lstrip / rstrip
/// extend the match over White_Space (never back into the previous match).
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  /// Matches the given tokens (empty contents are ignored).
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);
  /// Splits text[begin, end) (valid UTF-8) into token and plain-text segments, in order;
  /// plain segments are never empty.
  std::vector<TextSegment> split(const std::string& text, std::size_t begin, std::size_t end) const;

 private:
  std::vector<AddedToken> tokens_;  ///< longest content first
  std::vector<std::vector<std::size_t>> by_first_byte_;  ///< indices into tokens_, longest first
};

/// HF `AddedVocabulary::extract_and_normalize` followed by the model: `raw` tokens are found in
/// `text`; each stretch between them goes through `normalize`, then `normalized` tokens are found
/// in the result; each remaining plain piece goes to `plain(piece, at_start, ids)` (`at_start`:
/// the piece begins the text), which appends its ids. Token ids are appended in order.
void encode_with_added_tokens(
    const std::string& text, const AddedTokenMatcher& raw, const AddedTokenMatcher& normalized,
    const std::function<std::string(const std::string&)>& normalize,
    const std::function<void(const std::string& piece, bool at_start, std::vector<int64_t>& ids)>& plain,
    std::vector<int64_t>& ids);

}  // namespace headprune::models
