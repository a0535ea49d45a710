#include "models/model_family.h"

namespace headprune::models {

void ModelFamily::parse_head_sets(const nlohmann::json&, const std::string&, ModelConfig&) const {}

const std::map<std::string, std::string>& ModelFamily::attribute_map() const {
  static const std::map<std::string, std::string> none;
  return none;
}
std::optional<std::string> ModelFamily::layout_warning(const ModelConfig&) const { return {}; }
std::optional<std::string> ModelFamily::head_class(const ModelConfig& config) const {
  if (const auto layout = classification_layout(config)) return layout->architecture;
  return std::nullopt;
}
bool ModelFamily::needs_remote_code(const ModelConfig&) const { return remote_code() != nullptr; }

}  // namespace headprune::models
