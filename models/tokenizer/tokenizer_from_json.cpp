#include "models/tokenizer/tokenizer_from_json.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/model_family.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/tokenizer_json_sections.h"
#include "models/tokenizer/unigram_tokenizer.h"

namespace headprune::models {

void require_tokenizer_model(const std::string& type, const ModelConfig& config, const std::filesystem::path& file) {
  const auto accepted = config.family().tokenizer_models(config);
  if (std::find(accepted.begin(), accepted.end(), type) != accepted.end()) return;
  throw Error(fmt::format("{}: model type '{}' is not a tokenizer headprune reads for model_type '{}' (it reads "
                          "tokenizer.json model {}{})",
                          file.string(), type.empty() ? "none" : type, config.model_type, fmt::join(accepted, " or "),
                          accepted == std::vector<std::string>{"WordPiece"} ? ", or vocab.txt" : ""));
}

std::shared_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& tokenizer_json,
                                               const nlohmann::json& tokenizer_config, const ModelConfig& config,
                                               const std::filesystem::path& file) {
  const auto model = tokenizer_json.is_object() ? tokenizer_json.find("model") : tokenizer_json.end();
  const bool untyped = model == tokenizer_json.end() || !model->is_object() || !model->contains("type");
  const auto type = untyped ? std::string() : section_type(tokenizer_json, "model");
  require_tokenizer_model(type, config, file);
  if (type == "BPE") return std::make_shared<BpeTokenizer>(BpeTokenizer::from_json(tokenizer_json, file.string(), tokenizer_config));
  if (type == "Unigram")  // XLM-R
    return std::make_shared<UnigramTokenizer>(UnigramTokenizer::from_json(tokenizer_json, file.string(), tokenizer_config));
  return nullptr;
}

}  // namespace headprune::models
