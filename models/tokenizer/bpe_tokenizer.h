// BPE tokenizer as HF `tokenizers` runs it, in two flavours, identical in ids to HF:
//   byte-level (GPT-2, Llama 3, Qwen2, SmolLM): ByteLevel pre-tokenizer and decoder; checked
//     against tokenizers 0.23.3 on SmolLM2-135M-Instruct (tests/bpe_tokenizer_test.cpp, fixtures
//     by tools/make_bpe_fixtures.py);
//   SentencePiece-style (Gemma): normalizer Replace(" ", "▁"), the text one word, byte fallback
//     to <0xXX> tokens, decoder Replace("▁", " ") + ByteFallback + Fuse; checked against
//     transformers 5.24's GemmaTokenizer built from a GGUF (tests/spm_tokenizer_test.cpp,
//     fixtures by tools/make_spm_fixtures.py).
//
// Pipeline (HF tokenizers `TokenizerImpl::encode`):
//   1. added tokens with normalized false are found verbatim in the raw text (added_vocabulary.h);
//   2. each stretch between them is normalized (none, NFC or Replace(" ", "▁")), then searched
//      for the added tokens with normalized true;
//   3. each plain stretch is pre-tokenized (bpe_pre_tokenizer.h: Split / Digits / ByteLevel,
//      regexes run by PCRE2) into words;
//   4. each word is BPE-merged by rank (bpe_model.h);
//   5. the post-processor adds its special tokens (TemplateProcessing, e.g. Llama 3's BOS;
//      RobertaProcessing / BertProcessing: cls ... sep, RoBERTa's <s> ... </s>).
// Input must be UTF-8: invalid bytes throw headprune::Error naming their byte offset.
// Refused by name (headprune::Error): models other than BPE, BPE dropout /
// continuing_subword_prefix / end_of_word_suffix, an unk_token missing from the vocabulary,
// normalizers other than those above, pre-tokenizers other than ByteLevel / Split / Digits /
// Sequence, decoders other than the two above or not matching the pre-tokenizer, post-processors
// other than ByteLevel / TemplateProcessing / RobertaProcessing / BertProcessing / Sequence of them, added tokens with single_word
// true.
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
#include "models/tokenizer/bpe_model.h"
#include "models/tokenizer/bpe_pre_tokenizer.h"
#include "models/tokenizer/tokenizer.h"

namespace headprune::models {

/// The tokenizer part of a GGUF file's metadata (llama.cpp `tokenizer.ggml.*`), as a GGUF reader
/// fills it.
struct GgufVocabulary {
  std::string architecture;  ///< general.architecture (chooses the SentencePiece conversion)
  std::string model;  ///< tokenizer.ggml.model: "gpt2" for byte-level BPE, "llama" for SentencePiece
  std::string pre;    ///< tokenizer.ggml.pre ("smollm", "llama-bpe", "qwen2", "gpt-2"), may be empty
  std::vector<std::string> tokens;   ///< tokenizer.ggml.tokens, index = id
  std::vector<int32_t> token_types;  ///< tokenizer.ggml.token_type: 1 normal, 3 control, 4 user-defined, 6 byte
  std::vector<std::string> merges;   ///< tokenizer.ggml.merges, "a b", rank order
  std::vector<float> scores;         ///< tokenizer.ggml.scores (SentencePiece; filled when writing)
  int64_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  bool add_bos = false, add_eos = false;  ///< tokenizer.ggml.add_bos_token / add_eos_token
  bool add_bos_given = false;             ///< whether the file states add_bos_token
};

/// Whether a GGUF of `architecture` ("gemma", "gemma2", "gemma3") has the SentencePiece
/// vocabulary BpeTokenizer::from_gguf builds as transformers' GemmaTokenizer.
bool is_gemma_sentencepiece(const std::string& architecture);

/// SentencePiece's space, U+2581 "▁", as UTF-8.
inline constexpr const char* kMetaspace = "\xE2\x96\x81";

/// The normalizers BpeTokenizer runs (HF `normalizers`): none, NFC, Replace(" ", "▁"), or
/// LLaMA's legacy Sequence[Prepend("▁"), Replace(" ", "▁")] (Prepend: to every non-empty piece
/// between non-normalized added tokens, as HF normalizes each).
enum class BpeNormalizer { kNone, kNfc, kSpaceToMetaspace, kPrependSpaceToMetaspace };
/// The decoders (HF `decoders`): ByteLevel; Sequence[Replace("▁", " "), ByteFallback, Fuse]
/// (Gemma); the same + Strip(" ", 1, 0) (LLaMA, Mistral, Phi-3: one leading space of the fused
/// text dropped).
enum class BpeDecoder { kByteLevel, kByteFallback, kByteFallbackStrip };
/// HF's Metaspace pre-tokenizer with replacement "▁" and split false (LLaMA / Mistral
/// tokenizer.json when not legacy): spaces become "▁", and "▁" is prepended, unless the piece
/// starts with one, to the piece at the start of the text only (prepend_scheme "first"), to every
/// piece ("always") or to none ("never"). kNone: no Metaspace step.
enum class BpeMetaspace { kNone, kNever, kFirst, kAlways };

class BpeTokenizer;

/// The llama.cpp SentencePiece vocabulary of a Gemma tokenizer (BpeTokenizer::from_gguf's
/// inverse): tokens by id, token types (6 for the <0xXX> bytes, 3 for special added tokens, 4
/// for the other added tokens and for the "▁" runs transformers respelled, which go back to
/// spaces), scores in the order Gemma's files give them (normal tokens -0, -1, -2, ... by id,
/// control and user-defined -1000, bytes 0), no merges, the special ids and add_bos / add_eos
/// from what encode() adds. On Gemma 3 270M's file (tools/check_gemma3_gguf.py) tokens and
/// types are identical and the scores order every pair of tokens as the file's do (llama.cpp
/// only compares them); the values differ from id 236743 on, where the file's step down by 31.
/// @throws headprune::Error when `tokenizer` is not the SentencePiece flavour, has id gaps, or
///         adds anything but one BOS before / one EOS after the text.
GgufVocabulary gemma_gguf_vocabulary(const BpeTokenizer& tokenizer);

class BpeTokenizer : public Tokenizer {
 public:
  /// Reads HF `tokenizer.json` and, if present beside it, `tokenizer_config.json` for the
  /// names of bos_token / eos_token / pad_token (only to know pad_id(); which special tokens
  /// encode() adds is the tokenizer.json post-processor's business, as in HF's fast tokenizers).
  /// @throws headprune::Error naming the file and what is missing, malformed or unsupported.
  static BpeTokenizer from_tokenizer_json(const std::filesystem::path& file);
  /// The same from parsed JSON; `source` names it in messages; `config` is tokenizer_config.json
  /// (or null).
  static BpeTokenizer from_json(const nlohmann::json& tokenizer, const std::string& source,
                                         const nlohmann::json& config = nullptr);
  /// From a GGUF vocabulary.
  /// Byte-level ("gpt2"): llama.cpp's `pre` name chooses the pre-tokenizer as in upstream HF
  /// tokenizer.json (llama-vocab.cpp): "gpt-2"/"gpt2" -> ByteLevel(use_regex); "llama-bpe"/
  /// "llama3"/"llama-v3" -> Split(Llama 3 regex) + ByteLevel, ignore_merges; "qwen2" -> NFC,
  /// Split(Qwen2 regex) + ByteLevel; "smollm" -> Digits(individual) + ByteLevel(use_regex).
  /// Control tokens (type 3) become special added tokens, user-defined ones (4) plain added
  /// tokens; add_bos / add_eos become a TemplateProcessing post-processor.
  /// SentencePiece ("llama") of a Gemma architecture (gemma, gemma2, gemma3): as transformers
  /// 5.24's `gguf_tokenizer_mapping.gemma_tokenizer` builds GemmaTokenizer (see
  /// spm_from_gguf.cpp); other SentencePiece vocabularies are refused with the architecture.
  /// @throws headprune::Error naming the model, pre name or id that is not supported / invalid.
  static BpeTokenizer from_gguf(const GgufVocabulary& vocabulary);

  /// HF tokenizer.json of this tokenizer (loads in HF tokenizers and from_json with the same ids).
  nlohmann::json to_tokenizer_json() const;
  /// A minimal tokenizer_config.json (tokenizer_class PreTrainedTokenizerFast and the
  /// bos / eos / unk / pad token names known) to write beside it.
  nlohmann::json to_tokenizer_config_json() const;

  /// Ids of `text` as HF `Tokenizer.encode(text, add_special_tokens)` (no truncation).
  /// @throws headprune::Error on invalid UTF-8 (naming the byte offset).
  std::vector<int64_t> encode_text(const std::string& text, bool add_special_tokens) const;
  /// Tokenizer interface: HF `tokenizer(text, truncation=True, max_length=max_length)`: the text's
  /// ids cut to max_length minus the post-processor's tokens, then those added.
  /// @throws headprune::Error on invalid UTF-8 or a max_length below the added tokens' count.
  std::vector<int64_t> encode(const std::string& text, std::size_t max_length) const override;
  /// HF `decode(ids, skip_special_tokens)`: ByteLevel (token texts joined, each mapped back to
  /// bytes, invalid UTF-8 replaced by U+FFFD) or ByteFallback (▁ -> space, runs of <0xXX> tokens
  /// joined into their UTF-8, or one U+FFFD per byte when invalid). Ids with no token are
  /// skipped, as HF does (model embeddings are often padded beyond the vocabulary).
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const;

  /// Generation: the post-processor's tokens before the text (BOS where it adds one), none after.
  std::vector<int64_t> prompt_ids(const std::string& text) const override;
  /// Generation: decode(ids, skip_special_tokens = true).
  std::string generated_text(const std::vector<int64_t>& ids) const override { return decode(ids, true); }
  /// Generation: the EOS token, when the tokenizer names one.
  std::vector<int64_t> end_of_text_ids() const override;

  /// The pre-tokenizer's pieces of `text` (HF `pre_tokenizer.pre_tokenize_str` after the
  /// normalizer; a Metaspace step as at the start of a text), for tests and debugging. @throws headprune::Error on invalid UTF-8.
  std::vector<std::string> pre_tokenize(const std::string& text) const;
  /// `text` after the normalizer (HF `normalizer.normalize_str`).
  std::string normalize(const std::string& text) const;

  /// Padding id: pad token, else eos token, else 0.
  int64_t pad_id() const override;
  /// The vocabulary entry ("Ġthe") or added token content of `id`. @throws Error on an unknown id.
  std::string token_text(int64_t id) const override;
  bool is_special(int64_t id) const override;
  std::optional<int64_t> token_to_id(const std::string& token) const;
  /// One more than the largest id of the vocabulary and the added tokens.
  int64_t vocab_size() const;
  std::optional<int64_t> bos_id() const { return bos_id_; }
  BpeDecoder decoder() const { return decoder_; }
  std::optional<int64_t> eos_id() const { return eos_id_; }

 private:
  /// @throws headprune::Error naming `source` when the decoder does not fit the pre-tokenizer
  ///         (ByteLevel goes with ByteLevel), or a normalized added token contains a space the
  ///         Replace normalizer would change.
  BpeTokenizer(BpeModel model, BpePreTokenizer pre_tokenizer, BpeNormalizer normalizer, BpeDecoder decoder,
               std::vector<AddedToken> added, const std::string& source);
  static BpeTokenizer from_sentencepiece_gguf(const GgufVocabulary& vocabulary);
  void set_special_ids(const GgufVocabulary& vocabulary);
  std::string decode_tokens(const std::vector<const std::string*>& tokens) const;
  /// `text` through the Metaspace step (unchanged without one); `at_start`: it begins the text.
  std::string metaspace_piece(const std::string& text, bool at_start) const;
  /// Pre-tokenizes and encodes one piece between added tokens; `at_start`: the piece begins the text.
  void append_plain_ids(const std::string& text, bool at_start, std::vector<int64_t>& out) const;
  nlohmann::json pre_tokenizer_json() const;
  nlohmann::json decoder_json() const;
  const AddedToken* added_token(int64_t id) const;
  nlohmann::json post_processor_json() const;
  nlohmann::json normalizer_json() const;

  BpeModel model_;
  BpePreTokenizer pre_tokenizer_;
  BpeNormalizer normalizer_ = BpeNormalizer::kNone;
  BpeDecoder decoder_ = BpeDecoder::kByteLevel;
  BpeMetaspace metaspace_ = BpeMetaspace::kNone;  ///< set by from_json (pre_tokenizer Metaspace)
  std::vector<AddedToken> added_;
  std::unordered_map<int64_t, std::size_t> added_index_;  ///< id -> index in added_ (first one)
  std::unordered_set<std::string> special_contents_;      ///< contents of special added tokens
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  std::vector<int64_t> prefix_ids_, suffix_ids_;  ///< TemplateProcessing around the text
  std::optional<int64_t> bos_id_, eos_id_, unk_id_, pad_id_;
};

/// The tokenizer file in a checkpoint folder.
inline constexpr const char* kTokenizerJsonFile = "tokenizer.json";

}  // namespace headprune::models
