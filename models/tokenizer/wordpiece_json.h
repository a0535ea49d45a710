// A BERT WordPiece tokenizer described by Hugging Face `tokenizer.json` (the `tokenizers`
// library's serialisation) instead of `vocab.txt`: the vocabulary from `model.vocab` and the
// normalisation flags from the `BertNormalizer`. Anything else in the pipeline is refused by
// name, so a folder with only tokenizer.json tokenizes exactly as HF's fast tokenizer does.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/wordpiece.h"

namespace headprune::models {

/// The vocabulary (index = id) of a parsed tokenizer.json, and `options` updated from its
/// normalizer (lowercase, strip_accents, handle_chinese_chars) and model (unk_token,
/// max_input_chars_per_word). Format: huggingface/tokenizers `Tokenizer` JSON, model type
/// "WordPiece", normalizer "BertNormalizer", pre_tokenizer "BertPreTokenizer".
/// `options.added_tokens` receives wordpiece_added_tokens(tokenizer, file).
/// @throws headprune::Error naming `file` and the part that is not a BERT WordPiece pipeline
///         (another model or normalizer type, a subword prefix other than "##", clean_text
///         false, ids that are not 0..n-1, an added token wordpiece_added_tokens refuses).
std::vector<std::string> wordpiece_from_tokenizer_json(const nlohmann::json& tokenizer,
                                                       const std::filesystem::path& file,
                                                       WordPieceOptions& options);

/// tokenizer.json's `added_tokens` (the special tokens among them too: the tokenizer skips
/// those). @throws headprune::Error naming `file` for a malformed entry or `single_word` true
/// (matched only between word boundaries: not modelled).
std::vector<WordPieceAddedToken> wordpiece_added_tokens(const nlohmann::json& tokenizer,
                                                        const std::filesystem::path& file);

/// Checks tokenizer.json's post-processor puts `options`' cls and sep tokens around a sequence:
/// none, TemplateProcessing (transformers writes BERT's), or BertProcessing / RobertaProcessing
/// whose cls / sep are those tokens (MPNet's RobertaProcessing: <s> A </s>; for one sequence
/// its ids are BertProcessing's). @throws headprune::Error naming `file` otherwise.
void check_post_processor(const nlohmann::json& tokenizer, const std::filesystem::path& file,
                          const WordPieceOptions& options);

}  // namespace headprune::models
