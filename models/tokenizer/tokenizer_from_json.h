// Which tokenizer a checkpoint's tokenizer.json describes, for the checkpoint's family: the
// dispatch on its `model.type`, LibTorch-free so that it is fuzzed with the parsers
// (tests/fuzz/tokenizer_model_type.cpp).
//
// Format: Hugging Face `tokenizers`' tokenizer.json (its `model` section's `type`: "BPE",
// "Unigram", "WordPiece", "WordLevel", ...).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/tokenizer/tokenizer.h"

namespace headprune::models {

struct ModelConfig;

/// Refuses a tokenizer.json whose `model.type` (`type`, "" when it has none) is not one of
/// ModelFamily::tokenizer_models for `config`.
/// @throws headprune::Error "FILE: model type 'T' is not a tokenizer headprune reads for
///         model_type 'M' (it reads tokenizer.json model A or B[, or vocab.txt])".
void require_tokenizer_model(const std::string& type, const ModelConfig& config, const std::filesystem::path& file);

/// The BPE or Unigram tokenizer `tokenizer_json` (parsed from `file`, with its folder's
/// tokenizer_config.json or null) describes, after require_tokenizer_model; null for a WordPiece
/// model, which WordPieceTokenizer::from_directory reads with the folder's vocab.txt.
/// @throws headprune::Error for a type the family does not use or a malformed file.
std::shared_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& tokenizer_json,
                                               const nlohmann::json& tokenizer_config, const ModelConfig& config,
                                               const std::filesystem::path& file);

}  // namespace headprune::models
