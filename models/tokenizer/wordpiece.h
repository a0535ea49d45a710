// BERT WordPiece tokenizer, identical in output to HF `BertTokenizerFast` (tokenizers 0.20;
// the slow `BertTokenizer` agrees on ordinary text but differs on exotic Unicode).
//
// Pipeline (HF tokenizers `AddedVocabulary`, `BertNormalizer`, `BertPreTokenizer`, `WordPiece`;
// transformers `tokenization_bert.py` is the Python original):
//   0. special tokens ([CLS], [SEP], [PAD], [UNK], [MASK]) written verbatim in the text are
//      kept whole; the text between them goes through steps 1-5
//   1. clean text: drop U+0000, U+FFFD and control characters (Cc, Cf, Co except \t \n \r),
//      map whitespace (Unicode White_Space) to ' '
//   2. pad CJK ideographs with spaces (tokenize_chinese_chars)
//   3. strip accents (NFD, drop Mn) when strip_accents is true, or null and do_lower_case;
//      then lower-case each character (do_lower_case)
//   4. split on whitespace, then split every punctuation character off (ASCII
//      33-47, 58-64, 91-96, 123-126 and Unicode category P*)
//   5. WordPiece greedy longest-match-first with "##" continuation; a word longer than
//      100 characters (max_input_chars_per_word) or with no match becomes [UNK]
// Character categories follow tokenizers' Unicode 8.0 tables (see wordpiece.cpp).
// Input must be UTF-8: invalid bytes throw headprune::Error naming their offset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/tokenizer.h"

namespace headprune::models {

/// A token of tokenizer.json's `added_tokens` beyond the five special tokens (MPNet's "<unk>"):
/// kept whole where it occurs in the text (`normalized` false) or in the normalized text
/// (`normalized` true: after cleaning, accent stripping and lower-casing), as HF tokenizers'
/// AddedVocabulary splits them.
struct WordPieceAddedToken {
  std::string content;
  bool normalized = false;
  int64_t id = 0;  ///< must be the vocabulary's id of `content`
};

/// Settings read from `tokenizer_config.json` (HF defaults where keys are absent).
struct WordPieceOptions {
  bool do_lower_case = true;
  bool tokenize_chinese_chars = true;
  /// -1 = null (follow do_lower_case), 0 = false, 1 = true.
  int strip_accents = -1;
  std::size_t max_input_chars_per_word = 100;
  std::string unk_token = "[UNK]";
  std::string cls_token = "[CLS]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string mask_token = "[MASK]";
  /// Upper bound on ids per sequence including [CLS]/[SEP] (`model_max_length`).
  std::size_t model_max_length = 512;
  /// tokenizer.json's other added tokens; each must be in the vocabulary.
  std::vector<WordPieceAddedToken> added_tokens;
};

/// One encoded batch: row-major [batch, seq] int64 arrays padded with pad_id (mask 0).
struct EncodedBatch {
  std::size_t batch = 0;
  std::size_t seq = 0;
  std::vector<int64_t> input_ids;
  std::vector<int64_t> attention_mask;
  std::vector<int64_t> token_type_ids;
};

class WordPieceTokenizer : public Tokenizer {
 public:
  /// Builds from a vocabulary (one token per line, id = line number) and options.
  /// @throws headprune::Error if a special token is missing from the vocabulary.
  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options);

  /// Loads `vocab.txt` (or, without it, HF `tokenizer.json`: wordpiece_json.h),
  /// `tokenizer_config.json` and `special_tokens_map.json` from a checkpoint folder (the two
  /// JSON files are optional; the latter overrides the former's special tokens, and both
  /// override tokenizer.json's normalizer flags, as in HF's BertTokenizerFast).
  /// @throws headprune::Error naming the missing / malformed file.
  static WordPieceTokenizer from_directory(const std::filesystem::path& dir);
  /// The same with `dir`'s tokenizer.json already parsed (null when the folder has none).
  static WordPieceTokenizer from_directory(const std::filesystem::path& dir, const nlohmann::json& tokenizer_json);
  /// Whether `dir` holds the files from_directory reads (vocab.txt or tokenizer.json).
  static bool present_in(const std::filesystem::path& dir);

  /// Word pieces of `text` without added [CLS]/[SEP] (HF `tokenizer.tokenize`).
  /// @throws headprune::Error on invalid UTF-8.
  std::vector<std::string> tokenize(const std::string& text) const;

  /// Ids of `text` as HF `tokenizer(text, truncation=True, max_length=max_length)`:
  /// [CLS] pieces [SEP], pieces truncated so the total is <= max_length (max_length >= 2).
  /// Like HF, max_length is not capped at options().model_max_length: callers pass the
  /// smaller of the two. @throws headprune::Error on invalid UTF-8 or max_length < 2.
  std::vector<int64_t> encode(const std::string& text, std::size_t max_length) const override;

  /// Encodes several texts and right-pads them to the longest (HF `padding=True`).
  EncodedBatch encode_batch(const std::vector<std::string>& texts, std::size_t max_length) const;

  /// Inverse lookup, for debugging and reports. @throws headprune::Error on an unknown id.
  const std::string& id_to_token(int64_t id) const;
  /// @returns the id of `token`, or the [UNK] id if absent.
  int64_t token_to_id(const std::string& token) const;

  std::size_t vocab_size() const { return vocab_.size(); }
  int64_t pad_id() const override { return pad_id_; }
  std::string token_text(int64_t id) const override { return id_to_token(id); }
  bool is_special(int64_t id) const override;
  const WordPieceOptions& options() const { return options_; }

 private:
  /// Appends the piece ids of `text` (no [CLS]/[SEP]); @throws Error on invalid UTF-8.
  void append_ids(const std::string& text, std::vector<int64_t>& out) const;
  /// Normalizes, pre-tokenizes and WordPiece-splits text[begin, end) (no special tokens in it).
  void append_segment_ids(const std::u32string& text, std::size_t begin, std::size_t end,
                          std::vector<int64_t>& out) const;
  /// Pre-tokenizes and WordPiece-splits normalized text norm[begin, end).
  void append_words(const std::u32string& norm, std::size_t begin, std::size_t end,
                    std::vector<int64_t>& out) const;
  /// Greedy longest-match-first WordPiece of one pre-tokenized word, or [UNK].
  void append_word_ids(const std::u32string& word, std::vector<int64_t>& out) const;

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int64_t> ids_;
  WordPieceOptions options_;
  int64_t unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, pad_id_ = 0;
  /// Longest vocabulary entry in bytes (bounds the WordPiece search).
  std::size_t max_token_bytes_ = 0;
  /// Special tokens matched verbatim in the raw text, longest first, with their ids.
  std::vector<std::pair<std::u32string, int64_t>> specials_;
  /// Added tokens matched in the normalized text, longest first, with their ids.
  std::vector<std::pair<std::u32string, int64_t>> normalized_added_;
};

}  // namespace headprune::models
