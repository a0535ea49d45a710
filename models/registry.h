// The one place that maps an HF `model_type` to its family. Adding a family: one folder under
// models/ and one line in models/registry.cpp (docs/design.md, "Adding a model family").
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/model_family.h"

namespace headprune::models {

/// The family implementing `model_type`.
/// @throws headprune::Error "model_type 'X' is not supported (supported: bert, llama)".
const ModelFamily& family_of(const std::string& model_type);

/// Parses an HF config object by the family its `model_type` names (ModelConfig::from_json): the
/// one place a config meets its family. `source` names the file in error messages.
/// @throws headprune::Error "SOURCE: ..." for a non-object, a missing or unsupported model_type
///         (the supported list given), or the family's own refusals.
ModelConfig read_config(const nlohmann::json& j, const std::string& source);

/// Reads and parses `<dir>/config.json` (read_config).
/// @throws headprune::Error naming the folder when it has no config.json, or as read_config.
ModelConfig read_config_file(const std::filesystem::path& dir);

class GgufCodec;

/// The llama.cpp GGUF mapping of `model_type`'s family (models/gguf_codec.h), or nullptr when
/// the family has none (or in a build without LibTorch).
/// @throws headprune::Error for an unknown model_type.
const GgufCodec* gguf_codec_of(const std::string& model_type);

/// The GGUF mapping that reads files of `general.architecture` `architecture`, or nullptr.
const GgufCodec* gguf_codec_for_architecture(const std::string& architecture);

/// Every `general.architecture` some family reads, in registry order.
std::vector<std::string> supported_gguf_architectures();

/// Every supported `model_type`, in registry order.
std::vector<std::string> supported_model_types();

/// The family's model for `config` (random weights, shaped by its kept heads).
/// @throws headprune::Error for an unknown model_type; std::logic_error in a build without
///         LibTorch (HEADPRUNE_NO_TORCH, the fuzz harnesses).
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names);

}  // namespace headprune::models
