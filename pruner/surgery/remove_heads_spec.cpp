#include "pruner/surgery/remove_heads_spec.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/integer_key.h"

namespace headprune::pruner {

namespace {

/// The layer a spec's key names. @throws Error naming `flag` for a key that is not a layer.
int64_t spec_layer(const std::string& key, const nlohmann::json& value, const models::ModelConfig& config,
                   const char* flag, const char* what) {
  const int64_t layer = models::parse_integer_key(key).value_or(-1);
  if (layer < 0 || layer >= config.num_hidden_layers)
    throw Error(fmt::format("{}: layer '{}' does not exist (layers 0..{})", flag, key, config.num_hidden_layers - 1));
  if (!value.is_array()) throw Error(fmt::format("{}: layer {} must map to a list of {}", flag, layer, what));
  return layer;
}

}  // namespace

std::vector<std::vector<int64_t>> parse_remove_heads(const nlohmann::json& spec,
                                                     const models::ModelConfig& config) {
  if (!spec.is_object())
    throw Error("--remove-heads must be a JSON object {\"layer\": [head, ...]}, e.g. "
                "'{\"0\": [1, 5], \"3\": [0]}'");
  std::vector<std::vector<int64_t>> removed(static_cast<size_t>(config.num_hidden_layers));
  for (const auto& [key, heads] : spec.items()) {
    const int64_t layer = spec_layer(key, heads, config, "--remove-heads", "head indices");
    const auto& present = config.kept_heads[static_cast<size_t>(layer)];
    std::set<int64_t> seen;
    for (const auto& h : heads) {
      if (!h.is_number_integer())
        throw Error(fmt::format("--remove-heads: layer {} lists a non-integer head", layer));
      const auto head = h.get<int64_t>();
      if (head < 0 || head >= config.num_attention_heads)
        throw Error(fmt::format("--remove-heads: layer {} head {} is out of range (0..{})", layer,
                                head, config.num_attention_heads - 1));
      if (!seen.insert(head).second)
        throw Error(fmt::format("--remove-heads: layer {} lists head {} twice", layer, head));
      auto it = std::find(present.begin(), present.end(), head);
      if (it == present.end())
        throw Error(fmt::format("--remove-heads: layer {} head {} was already removed", layer, head));
      removed[static_cast<size_t>(layer)].push_back(it - present.begin());
    }
  }
  return removed;
}

std::vector<std::vector<int64_t>> parse_remove_ffn(const nlohmann::json& spec, const models::ModelConfig& config) {
  if (!spec.is_object())
    throw Error("--remove-ffn must be a JSON object {\"layer\": [neuron, ...]}, e.g. '{\"0\": [0, 1, 2]}'");
  std::vector<std::vector<int64_t>> removed(static_cast<size_t>(config.num_hidden_layers));
  for (const auto& [key, neurons] : spec.items()) {
    const int64_t layer = spec_layer(key, neurons, config, "--remove-ffn", "FFN neuron positions");
    const int64_t width = config.ffn_width(layer);
    std::set<int64_t> seen;
    for (const auto& n : neurons) {
      if (!n.is_number_integer())
        throw Error(fmt::format("--remove-ffn: layer {} lists a non-integer neuron", layer));
      const auto neuron = n.get<int64_t>();
      if (neuron < 0 || neuron >= width)
        throw Error(fmt::format("--remove-ffn: layer {} neuron {} is out of range (the layer has {}: 0..{})", layer,
                                neuron, width, width - 1));
      if (!seen.insert(neuron).second)
        throw Error(fmt::format("--remove-ffn: layer {} lists neuron {} twice", layer, neuron));
      removed[static_cast<size_t>(layer)].push_back(neuron);
    }
  }
  return removed;
}

}  // namespace headprune::pruner
