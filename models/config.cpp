#include "models/config.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

const std::set<std::string> kSupportedModelTypes = {"bert"};

template <typename T>
T required(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key))
    throw Error(fmt::format("{}: required key '{}' is missing", source, key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}: key '{}' has the wrong type ({})", source, key,
                            j.at(key).type_name()));
  }
}

template <typename T>
T optional(const nlohmann::json& j, const char* key, T fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  return required<T>(j, key, source);
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(fmt::format("cannot open {}", file.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{} is not valid JSON: {}", file.string(), e.what()));
  }
}

std::vector<int64_t> ModelConfig::heads_per_layer() const {
  std::vector<int64_t> counts;
  for (const auto& kept : kept_heads) counts.push_back(static_cast<int64_t>(kept.size()));
  return counts;
}

int64_t ModelConfig::total_heads() const {
  int64_t total = 0;
  for (auto n : heads_per_layer()) total += n;
  return total;
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object", source));
  ModelConfig c;
  c.raw = j;
  c.model_type = required<std::string>(j, "model_type", source);
  if (!kSupportedModelTypes.count(c.model_type))
    throw Error(fmt::format("{}: model_type '{}' is not supported (supported: bert)", source,
                            c.model_type));
  c.vocab_size = required<int64_t>(j, "vocab_size", source);
  c.hidden_size = required<int64_t>(j, "hidden_size", source);
  c.num_hidden_layers = required<int64_t>(j, "num_hidden_layers", source);
  c.num_attention_heads = required<int64_t>(j, "num_attention_heads", source);
  c.intermediate_size = required<int64_t>(j, "intermediate_size", source);
  c.num_key_value_heads =
      optional<int64_t>(j, "num_key_value_heads", c.num_attention_heads, source);
  c.hidden_act = optional<std::string>(j, "hidden_act", "gelu", source);
  c.max_position_embeddings = optional<int64_t>(j, "max_position_embeddings", 512, source);
  c.type_vocab_size = optional<int64_t>(j, "type_vocab_size", 2, source);
  c.pad_token_id = optional<int64_t>(j, "pad_token_id", 0, source);
  c.layer_norm_eps = optional<double>(j, "layer_norm_eps", 1e-12, source);
  for (auto [name, value] : {std::pair{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
                             {"num_hidden_layers", c.num_hidden_layers},
                             {"num_attention_heads", c.num_attention_heads},
                             {"intermediate_size", c.intermediate_size}})
    if (value <= 0) throw Error(fmt::format("{}: '{}' must be positive, got {}", source, name, value));
  if (j.contains("head_dim") && !j.at("head_dim").is_null()) {
    c.head_dim = required<int64_t>(j, "head_dim", source);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      throw Error(fmt::format("{}: hidden_size {} is not divisible by num_attention_heads {}",
                              source, c.hidden_size, c.num_attention_heads));
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  const std::set<std::string> acts = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
  if (!acts.count(c.hidden_act))
    throw Error(fmt::format("{}: hidden_act '{}' is not supported (gelu, gelu_new, relu)", source,
                            c.hidden_act));

  c.kept_heads.assign(c.num_hidden_layers, {});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (int64_t h = 0; h < c.num_attention_heads; ++h) c.kept_heads[l].push_back(h);
  if (j.contains("pruned_heads") && !j.at("pruned_heads").is_null()) {
    const auto& pruned = j.at("pruned_heads");
    if (!pruned.is_object())
      throw Error(fmt::format("{}: 'pruned_heads' must be an object layer -> [heads]", source));
    for (const auto& [key, heads] : pruned.items()) {
      int64_t layer = -1;
      try {
        layer = std::stoll(key);
      } catch (const std::exception&) {
      }
      if (layer < 0 || layer >= c.num_hidden_layers)
        throw Error(fmt::format("{}: pruned_heads names layer '{}', but the model has {} layers",
                                source, key, c.num_hidden_layers));
      if (!heads.is_array())
        throw Error(fmt::format("{}: pruned_heads['{}'] must be a list of head indices", source, key));
      std::vector<int64_t> removed;
      for (const auto& h : heads) {
        if (!h.is_number_integer())
          throw Error(fmt::format("{}: pruned_heads['{}'] holds a non-integer", source, key));
        removed.push_back(h.get<int64_t>());
      }
      c.remove_heads(layer, removed);
    }
  }
  return c;
}

ModelConfig ModelConfig::from_directory(const std::filesystem::path& dir) {
  const auto file = dir / "config.json";
  if (!std::filesystem::exists(file))
    throw Error(fmt::format("{} has no config.json: is it a Hugging Face checkpoint folder?",
                            dir.string()));
  return from_json(read_json_file(file), file.string());
}

void ModelConfig::remove_heads(int64_t layer, const std::vector<int64_t>& removed) {
  if (layer < 0 || layer >= num_hidden_layers)
    throw Error(fmt::format("layer {} is out of range (the model has {} layers)", layer,
                            num_hidden_layers));
  auto& kept = kept_heads[layer];
  auto& gone = pruned_heads[layer];
  for (auto h : removed) {
    auto it = std::find(kept.begin(), kept.end(), h);
    if (it == kept.end())
      throw Error(fmt::format("layer {}: head {} is not present (heads 0..{} exist originally; "
                              "already removed: {})",
                              layer, h, num_attention_heads - 1, fmt::join(gone, ",")));
    kept.erase(it);
    gone.push_back(h);
  }
  std::sort(gone.begin(), gone.end());
  if (gone.empty()) pruned_heads.erase(layer);
}

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j = raw;
  nlohmann::json pruned = nlohmann::json::object();
  for (const auto& [layer, heads] : pruned_heads)
    if (!heads.empty()) pruned[std::to_string(layer)] = heads;
  j["pruned_heads"] = pruned;
  return j;
}

}  // namespace headprune::models
