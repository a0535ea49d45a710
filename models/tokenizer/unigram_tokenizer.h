// SentencePiece Unigram tokenizers from HF tokenizer.json, as HF `tokenizers` runs them
// (XLM-RoBERTa and its descendants: multilingual-e5, paraphrase-multilingual-*, bge-m3).
//
// Pipeline (HF `TokenizerImpl::encode`):
//   1. added tokens with normalized false are found verbatim in the raw text (added_vocabulary.h);
//   2. each stretch between them is normalized: the `Precompiled` charsmap
//      (precompiled_charsmap.h: SentencePiece's nmt_nfkc rules), or nothing; then searched for the
//      added tokens with normalized true (their contents normalized the same way);
//   3. each plain piece is pre-tokenized: optionally `WhitespaceSplit` (cut at Unicode White_Space,
//      which is dropped), then `Metaspace` (spaces become "▁"; with prepend_scheme "always" each
//      piece not starting with "▁" gets one; split true cuts before every "▁");
//   4. each word is segmented by the Unigram model (unigram_model.h: Viterbi over piece scores);
//   5. the post-processor adds its special tokens (tokenizer_json_sections.h; XLM-R: <s> ... </s>).
// Input must be UTF-8: invalid bytes throw headprune::Error naming their byte offset.
// Refused by name (headprune::Error): models other than Unigram, byte_fallback true,
// normalizers other than Precompiled (alone or as the one step of a Sequence) or none,
// pre-tokenizers other than Metaspace / Sequence[WhitespaceSplit, Metaspace], Metaspace with a
// replacement other than "▁" or prepend_scheme "first", decoders other than Metaspace or none,
// post-processors tokenizer_json_sections.h does not read, added tokens with single_word true.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/added_vocabulary.h"
#include "models/tokenizer/precompiled_charsmap.h"
#include "models/tokenizer/tokenizer.h"
#include "models/tokenizer/unigram_model.h"

namespace headprune::models {

class UnigramTokenizer : public Tokenizer {
 public:
  /// Reads HF tokenizer.json and, if present beside it, tokenizer_config.json (for pad_token).
  /// @throws headprune::Error naming the file and what is missing, malformed or unsupported.
  static UnigramTokenizer from_tokenizer_json(const std::filesystem::path& file);
  /// The same from parsed JSON; `source` names it in messages; `config` is tokenizer_config.json
  /// (or null).
  static UnigramTokenizer from_json(const nlohmann::json& tokenizer, const std::string& source,
                                    const nlohmann::json& config = nullptr);

  /// Ids of `text` as HF `Tokenizer.encode(text, add_special_tokens)` (no truncation).
  /// @throws headprune::Error on invalid UTF-8 (naming the byte offset).
  std::vector<int64_t> encode_text(const std::string& text, bool add_special_tokens) const;
  /// Tokenizer interface: HF `tokenizer(text, truncation=True, max_length=max_length)`.
  /// @throws headprune::Error on invalid UTF-8 or a max_length below the added tokens' count.
  std::vector<int64_t> encode(const std::string& text, std::size_t max_length) const override;
  /// `text` after the normalizer (HF `normalizer.normalize_str`).
  std::string normalize(const std::string& text) const;
  /// The pre-tokenizer's words of `text` (HF `pre_tokenizer.pre_tokenize_str`), at the text's start.
  std::vector<std::string> pre_tokenize(const std::string& text) const;

  /// tokenizer_config.json's pad_token, else "<pad>", else 0.
  int64_t pad_id() const override { return pad_id_; }
  /// The piece ("▁the") or added token content of `id`. @throws headprune::Error on an unknown id.
  std::string token_text(int64_t id) const override;
  bool is_special(int64_t id) const override { return special_ids_.count(id) > 0; }
  std::optional<int64_t> token_to_id(const std::string& token) const;

 private:
  UnigramTokenizer(UnigramModel model, std::optional<PrecompiledCharsmap> charsmap, std::vector<AddedToken> added);

  UnigramModel model_;
  std::optional<PrecompiledCharsmap> charsmap_;  ///< the Precompiled normalizer, or none
  bool whitespace_split_ = false;                ///< WhitespaceSplit before Metaspace
  bool prepend_metaspace_ = true;                ///< Metaspace prepend_scheme "always" (else "never")
  bool split_metaspace_ = true;                  ///< Metaspace split
  std::vector<AddedToken> added_;
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  std::unordered_set<int64_t> special_ids_;
  std::unordered_map<int64_t, std::string> added_text_;  ///< id -> content of added tokens
  std::vector<int64_t> prefix_ids_, suffix_ids_;         ///< the post-processor's, around the text
  int64_t pad_id_ = 0;
};

}  // namespace headprune::models
