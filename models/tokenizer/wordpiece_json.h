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
/// @throws headprune::Error naming `file` and the part that is not a BERT WordPiece pipeline
///         (another model or normalizer type, a subword prefix other than "##", clean_text
///         false, ids that are not 0..n-1, an added token other than the five BERT special
///         tokens, a post-processor other than BERT's).
std::vector<std::string> wordpiece_from_tokenizer_json(const nlohmann::json& tokenizer,
                                                       const std::filesystem::path& file,
                                                       WordPieceOptions& options);

}  // namespace headprune::models
