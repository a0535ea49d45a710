// The pre-tokenizers of BPE tokenizers (HF tokenizers `pre_tokenizers`): the steps GPT-2,
// Llama 3, Qwen2, SmolLM and Gemma use, run in order as HF's `Sequence` does, each splitting
// every piece of the one before.
//   Split     {"type":"Split","pattern":{"Regex":P}|{"String":S},"behavior":B,"invert":false}:
//              B "Isolated": every match of P (or occurrence of S) becomes its own piece, and so
//              does the text between matches; B "MergedWithPrevious": each match ends the piece
//              before it (Gemma: Split(" ") - a no-op after its normalizer replaced the spaces);
//   Digits    {"type":"Digits","individual_digits":B}: numeric characters (\p{N}, Rust
//              char::is_numeric) split off, one piece each (B) or one per run (!B);
//   ByteLevel {"type":"ByteLevel","add_prefix_space":A,"trim_offsets":T,"use_regex":R}: with A,
//              a piece not starting with ' ' gets one; with R, GPT-2's regex splits it
//              (kGpt2Pattern); then every byte becomes its bytes_to_unicode character. It must
//              be the last step (HF applies the byte mapping to the pieces as they stand).
// No steps (pre_tokenizer null) leaves the text one piece. Other types, behaviours, or invert
// true are refused by name.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/pcre2_regex.h"

namespace headprune::models {

/// GPT-2's pre-tokenizer regex as HF ByteLevel(use_regex=true) has it (OpenAI encoder.py plus
/// a final `|\s+`).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
/// Llama 3's Split regex (tokenizer.json of Meta-Llama-3-8B; llama.cpp pre "llama-bpe").
inline constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// Qwen2's Split regex (tokenizer.json of Qwen2-7B; llama.cpp pre "qwen2").
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// One step of the pre-tokenizer (see the file comment for the HF JSON of each).
struct PreTokenizerStep {
  enum class Kind { kSplit, kDigits, kByteLevel };
  Kind kind = Kind::kByteLevel;
  std::string pattern;             ///< Split: the regex, or the literal text if `literal`
  bool literal = false;            ///< Split: pattern {"String": ...} rather than {"Regex": ...}
  bool merged_with_previous = false;  ///< Split: behavior MergedWithPrevious rather than Isolated
  bool individual_digits = false;  ///< Digits
  bool add_prefix_space = false;   ///< ByteLevel
  bool trim_offsets = true;        ///< ByteLevel (offsets only; kept for the JSON round trip)
  bool use_regex = true;           ///< ByteLevel

  static PreTokenizerStep split(std::string regex);
  static PreTokenizerStep digits(bool individual);
  static PreTokenizerStep byte_level(bool add_prefix_space, bool use_regex);
};

class BpePreTokenizer {
 public:
  /// Compiles the steps' regexes. @throws headprune::Error naming `source` if a regex does not
  /// compile or a step follows ByteLevel.
  BpePreTokenizer(std::vector<PreTokenizerStep> steps, const std::string& source);

  /// From tokenizer.json's "pre_tokenizer" (null, one step or a "Sequence" of them).
  /// @throws headprune::Error naming `source` and the unsupported type / behavior / flag.
  static BpePreTokenizer from_json(const nlohmann::json& pre_tokenizer, const std::string& source);
  /// The same JSON back (null, a single step, or a Sequence).
  nlohmann::json to_json() const;

  /// Whether the last step is ByteLevel (pieces come out byte-level mapped).
  bool byte_level() const;

  /// The pieces of `text` (valid UTF-8, no added tokens in it), byte-level mapped ("Ġworld")
  /// when byte_level(), as HF `pre_tokenizer.pre_tokenize_str(text)` lists them. Empty pieces
  /// dropped.
  std::vector<std::string> pre_tokenize(const std::string& text) const;

 private:
  std::vector<PreTokenizerStep> steps_;
  std::vector<Pcre2Regex> regexes_;  ///< one per step (ByteLevel without regex: unused)
};

}  // namespace headprune::models
