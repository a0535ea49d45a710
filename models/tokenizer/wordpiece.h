// BERT WordPiece tokenizer, identical in output to HF `BertTokenizer` / `BertTokenizerFast`.
//
// Pipeline (HF transformers `tokenization_bert.py`; tokenizers `BertNormalizer`,
// `BertPreTokenizer`, `WordPiece`):
//   1. clean text: drop U+0000, U+FFFD and control characters, map whitespace to ' '
//   2. pad CJK ideographs with spaces (tokenize_chinese_chars)
//   3. lower-case (do_lower_case) and strip accents (NFD, drop Mn) when strip_accents is
//      null-and-lowercasing or true
//   4. split on whitespace, then split every punctuation character off (ASCII
//      33-47, 58-64, 91-96, 123-126 and Unicode category P*)
//   5. WordPiece greedy longest-match-first with "##" continuation; a word longer than
//      100 characters (max_input_chars_per_word) or with no match becomes [UNK]
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

namespace headprune::models {

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
};

/// One encoded batch: row-major [batch, seq] int64 arrays padded with pad_id (mask 0).
struct EncodedBatch {
  std::size_t batch = 0;
  std::size_t seq = 0;
  std::vector<int64_t> input_ids;
  std::vector<int64_t> attention_mask;
  std::vector<int64_t> token_type_ids;
};

class WordPieceTokenizer {
 public:
  /// Builds from a vocabulary (one token per line, id = line number) and options.
  /// @throws headprune::Error if a special token is missing from the vocabulary.
  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options);

  /// Loads `vocab.txt`, `tokenizer_config.json` and `special_tokens_map.json` from a
  /// checkpoint folder. @throws headprune::Error naming the missing / malformed file.
  static WordPieceTokenizer from_directory(const std::filesystem::path& dir);

  /// Word pieces of `text` without special tokens (HF `tokenizer.tokenize`).
  std::vector<std::string> tokenize(const std::string& text) const;

  /// Ids of `text` as HF `tokenizer(text, truncation=True, max_length=max_length)`:
  /// [CLS] pieces [SEP], pieces truncated so the total is <= max_length (max_length >= 2).
  std::vector<int64_t> encode(const std::string& text, std::size_t max_length) const;

  /// Encodes several texts and right-pads them to the longest (HF `padding=True`).
  EncodedBatch encode_batch(const std::vector<std::string>& texts, std::size_t max_length) const;

  /// Inverse lookup, for debugging and reports. @throws headprune::Error on an unknown id.
  const std::string& id_to_token(int64_t id) const;
  /// @returns the id of `token`, or the [UNK] id if absent.
  int64_t token_to_id(const std::string& token) const;

  std::size_t vocab_size() const { return vocab_.size(); }
  int64_t pad_id() const { return pad_id_; }
  const WordPieceOptions& options() const { return options_; }

 private:
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int64_t> ids_;
  WordPieceOptions options_;
  int64_t unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, pad_id_ = 0;
};

}  // namespace headprune::models
