// What the pruner needs of a tokenizer: text -> model input ids, and the padding id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace headprune::models {

/// A checkpoint's tokenizer as training and evaluation use it (WordPieceTokenizer for BERT,
/// Llama2cTokenizer for llama2.c LLaMA, BpeTokenizer for GPT-2-style BPE vocabularies).
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// Ids of `text` with the model's special tokens (BERT: [CLS] ... [SEP]; LLaMA: BOS ...),
  /// at most `max_length` of them. @throws headprune::Error on invalid input.
  virtual std::vector<int64_t> encode(const std::string& text, std::size_t max_length) const = 0;
  /// Id used for padding positions (masked out; any valid id).
  virtual int64_t pad_id() const = 0;
  /// The vocabulary entry of `id` as stored (WordPiece "##ing", SentencePiece "▁the").
  /// @throws headprune::Error on an unknown id.
  virtual std::string token_text(int64_t id) const = 0;
  /// Whether `id` is a special token the tokenizer adds or reserves ([CLS], [SEP], [PAD],
  /// [UNK], [MASK]; <s>, </s>, <unk>), not text.
  virtual bool is_special(int64_t id) const = 0;

  // What generation needs (causal language models; WordPiece has none of it).
  /// Ids of a prompt to continue: `text` with the special tokens the model expects before it
  /// (BOS where the tokenizer adds one) and none after; special-token strings written in the
  /// text (ChatML's <|im_start|>) are read as those tokens where the tokenizer knows them.
  /// @throws headprune::Error for a tokenizer without generation support, or invalid input.
  virtual std::vector<int64_t> prompt_ids(const std::string& text) const;
  /// The text of `ids` with special tokens left out. @throws headprune::Error as prompt_ids.
  virtual std::string generated_text(const std::vector<int64_t>& ids) const;
  /// Ids that end a generated text (EOS; llama2.c also BOS). Empty without generation support.
  virtual std::vector<int64_t> end_of_text_ids() const { return {}; }
};

}  // namespace headprune::models
