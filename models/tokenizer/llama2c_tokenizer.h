// The llama2.c tokenizer file (`tokenizer.bin`, e.g. stories260K's tok512.bin): a SentencePiece
// BPE vocabulary exported by llama2.c's tokenizer.py, with run.c's encode/decode.
//
// File layout (little-endian): int32 max_token_length, then per token id 0..N-1: float32 score,
// int32 byte length, the bytes (no terminator). SentencePiece's "▁" is stored as a plain space;
// ids 3..258 are the byte-fallback pieces "<0x00>".."<0xFF>"; BOS (1) and EOS (2) are stored
// as "\n<s>\n" and "\n</s>\n".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/tokenizer/tokenizer.h"

namespace headprune::models {

/// Encoder/decoder over a llama2.c tokenizer file.
class Llama2cTokenizer : public Tokenizer {
 public:
  static constexpr int64_t kUnk = 0, kBos = 1, kEos = 2;
  static constexpr int64_t kFirstByteToken = 3;  ///< "<0x00>"; byte b is id 3 + b

  /// Reads a llama2.c tokenizer file holding `vocab_size` tokens (the model's vocabulary size).
  /// @throws headprune::Error naming the file if it is missing, truncated (which token), or
  ///         has a negative length, or if its byte-fallback tokens are not at ids 3..258.
  static Llama2cTokenizer from_file(const std::filesystem::path& file, int64_t vocab_size);
  /// The same from the file's bytes; `source` names it in messages. Every length is checked
  /// against the bytes left before anything is allocated.
  static Llama2cTokenizer from_bytes(const std::string& bytes, int64_t vocab_size,
                                     const std::string& source);

  /// run.c's encode (after SentencePiece's whitespace rule, if enabled below): optional BOS; a dummy-prefix " " token when `text` is non-empty
  /// (SentencePiece add_dummy_prefix); each UTF-8 character's piece, or its bytes as <0xXX>
  /// tokens when the vocabulary lacks it; then repeatedly merge the adjacent pair whose
  /// concatenation is a piece with the highest score (leftmost on ties); optional EOS.
  std::vector<int64_t> encode(const std::string& text, bool bos, bool eos) const;

  /// Tokenizer interface: BOS + encode(text), truncated to `max_length` ids (>= 1).
  std::vector<int64_t> encode(const std::string& text, std::size_t max_length) const override;
  /// Padding positions are masked; id 0 (<unk>) fills them.
  int64_t pad_id() const override { return kUnk; }
  std::string token_text(int64_t id) const override;
  bool is_special(int64_t id) const override { return id == kUnk || id == kBos || id == kEos; }

  /// SentencePiece's `remove_extra_whitespaces` normalizer rule, which the tok512.model that
  /// stories260K was trained with applies but run.c does not: strip leading and trailing
  /// spaces and collapse runs of spaces (U+0020 only) into one before encoding. Off by default
  /// (run.c's behaviour, which round-trips every text); on, encode() gives SentencePiece's ids
  /// for such texts too (tests/llama_test.cpp checks both).
  void set_remove_extra_whitespaces(bool on) { remove_extra_whitespaces_ = on; }

  /// run.c's decode over a sequence: the piece of a token that follows BOS loses its leading
  /// space; <0xXX> pieces become the raw byte; BOS/EOS produce nothing.
  /// @throws headprune::Error for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const;
  /// Generation: BOS + encode(text), decode(ids), and BOS / EOS end a text (run.c's loop).
  std::vector<int64_t> prompt_ids(const std::string& text) const override { return encode(text, true, false); }
  std::string generated_text(const std::vector<int64_t>& ids) const override { return decode(ids); }
  std::vector<int64_t> end_of_text_ids() const override { return {kBos, kEos}; }

  /// One token's text as run.c's decode(prev, token) prints it.
  std::string decode_token(int64_t prev, int64_t token) const;

  int64_t vocab_size() const { return static_cast<int64_t>(pieces_.size()); }
  const std::string& piece(int64_t id) const { return pieces_.at(id); }
  float score(int64_t id) const { return scores_.at(id); }

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int64_t> ids_;  ///< piece -> id (first id if repeated)
  bool remove_extra_whitespaces_ = false;
};

/// The tokenizer file headprune looks for in a LLaMA checkpoint folder.
inline constexpr const char* kLlama2cTokenizerFile = "tokenizer.bin";

}  // namespace headprune::models
