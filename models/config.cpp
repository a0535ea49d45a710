#include "models/config.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/config_keys.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/integer_key.h"

namespace headprune::models {
namespace {

const std::set<std::string> kSupportedModelTypes = {"bert", "llama"};

template <typename T>
T required(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key))
    throw Error(fmt::format("{}: required key '{}' is missing", source, key));
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(json_integer(j.at(key), fmt::format("{}: key '{}'", source, key)));
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

/// LLaMA-only keys (HF LlamaConfig names and defaults).
void parse_llama_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  if (c.hidden_act != "silu")
    throw Error(fmt::format("{}: hidden_act '{}' is not supported for llama (silu)", source,
                            c.hidden_act));
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(fmt::format("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                            source, c.num_attention_heads, c.num_key_value_heads));
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    throw Error(fmt::format("{}: head_dim {} must be positive and even (rotary embedding)", source,
                            c.head_dim));
  c.rms_norm_eps = optional<double>(j, "rms_norm_eps", 1e-6, source);
  c.rope_theta = optional<double>(j, "rope_theta", 10000.0, source);
  // transformers 5 writes RoPE as rope_parameters (older: rope_scaling); only the default
  // rotary embedding is implemented.
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(key) || j.at(key).is_null()) continue;
    const auto& rope = j.at(key);
    if (!rope.is_object() || rope.value("rope_type", std::string()) != "default")
      throw Error(fmt::format("{}: {} {} is not supported (only plain RoPE, rope_type "
                              "\"default\")",
                              source, key, rope.dump()));
    for (const auto& [name, value] : rope.items())
      if (name != "rope_type" && name != "rope_theta")
        throw Error(fmt::format("{}: {}.{} is not supported (plain RoPE takes rope_theta only)",
                                source, key, name));
    c.rope_theta = optional<double>(rope, "rope_theta", c.rope_theta, source);
  }
  c.tie_word_embeddings = optional<bool>(j, "tie_word_embeddings", false, source);
  c.attention_bias = optional<bool>(j, "attention_bias", false, source);
  c.mlp_bias = optional<bool>(j, "mlp_bias", false, source);
  c.bos_token_id = optional<int64_t>(j, "bos_token_id", 1, source);
  // Some configs list several end tokens; the first is the one generation stops at.
  if (j.contains("eos_token_id") && j.at("eos_token_id").is_array() && !j.at("eos_token_id").empty())
    c.eos_token_id = json_integer(j.at("eos_token_id").at(0), source + ": eos_token_id[0]");
  else
    c.eos_token_id = optional<int64_t>(j, "eos_token_id", 2, source);
}

/// `headprune.kept_heads`: per layer, the original query heads present (LLaMA configs whose
/// layers a standard HF config cannot describe).
void parse_headprune_kept_heads(const nlohmann::json& j, const std::string& source,
                                ModelConfig& c) {
  if (!j.contains("headprune") || !j.at("headprune").is_object() ||
      !j.at("headprune").contains("kept_heads"))
    return;
  const auto& kept = j.at("headprune").at("kept_heads");
  if (!kept.is_array() || static_cast<int64_t>(kept.size()) != c.num_hidden_layers)
    throw Error(fmt::format("{}: headprune.kept_heads must be a list of {} lists (one per layer)",
                            source, c.num_hidden_layers));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const auto heads = json_integer_list(kept.at(l), fmt::format("{}: headprune.kept_heads[{}]", source, l));
    for (size_t i = 0; i < heads.size(); ++i) {
      if (heads[i] < 0 || heads[i] >= c.num_attention_heads)
        throw Error(fmt::format("{}: headprune.kept_heads[{}] names head {}, but layers have {} "
                                "query heads (num_attention_heads)",
                                source, l, heads[i], c.num_attention_heads));
      if (i > 0 && heads[i] <= heads[i - 1])
        throw Error(fmt::format("{}: headprune.kept_heads[{}] must be ascending and unique",
                                source, l));
    }
    std::vector<int64_t> removed;
    for (int64_t h = 0; h < c.num_attention_heads; ++h)
      if (!std::binary_search(heads.begin(), heads.end(), h)) removed.push_back(h);
    c.remove_heads(l, removed);
  }
}

/// `headprune.original_head_ids` / `original_num_attention_heads`: what a uniform LLaMA export
/// renumbered (see ModelConfig::original_head_ids). Absent: the identity.
void parse_original_head_ids(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  c.original_num_attention_heads = c.num_attention_heads;
  c.original_head_ids.assign(c.num_hidden_layers, {});
  for (auto& ids : c.original_head_ids)
    for (int64_t h = 0; h < c.num_attention_heads; ++h) ids.push_back(h);
  const auto note = j.value("headprune", nlohmann::json::object());
  if (!note.is_object() || !note.contains("original_head_ids")) return;
  const auto original = optional<int64_t>(note, "original_num_attention_heads", 0, source);
  auto ids = json_integer_lists(note.at("original_head_ids"), source + ": headprune.original_head_ids");
  if (static_cast<int64_t>(ids.size()) != c.num_hidden_layers || original < c.num_attention_heads)
    throw Error(fmt::format("{}: headprune.original_head_ids must list {} layers and "
                            "headprune.original_num_attention_heads be >= {}",
                            source, c.num_hidden_layers, c.num_attention_heads));
  for (size_t l = 0; l < ids.size(); ++l) {
    const auto& layer = ids[l];
    const bool ascending = std::adjacent_find(layer.begin(), layer.end(), std::greater_equal<>()) == layer.end();
    if (static_cast<int64_t>(layer.size()) != c.num_attention_heads || !ascending ||
        (!layer.empty() && (layer.front() < 0 || layer.back() >= original)))
      throw Error(fmt::format("{}: headprune.original_head_ids[{}] must hold {} ascending head "
                              "indices below {}",
                              source, l, c.num_attention_heads, original));
  }
  c.original_num_attention_heads = original;
  c.original_head_ids = std::move(ids);
}

}  // namespace

std::vector<int64_t> ModelConfig::original_ids(int64_t layer, const std::vector<int64_t>& heads) const {
  std::vector<int64_t> out;
  for (auto h : heads) out.push_back(original_head_ids.at(static_cast<size_t>(layer)).at(static_cast<size_t>(h)));
  return out;
}

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
    throw Error(fmt::format("{}: model_type '{}' is not supported (supported: bert, llama)", source,
                            c.model_type));
  check_config_keys(j, c.model_type, source);
  c.vocab_size = required<int64_t>(j, "vocab_size", source);
  c.hidden_size = required<int64_t>(j, "hidden_size", source);
  c.num_hidden_layers = required<int64_t>(j, "num_hidden_layers", source);
  c.num_attention_heads = required<int64_t>(j, "num_attention_heads", source);
  c.intermediate_size = required<int64_t>(j, "intermediate_size", source);
  c.num_key_value_heads =
      optional<int64_t>(j, "num_key_value_heads", c.num_attention_heads, source);
  const bool llama = c.model_type == "llama";
  c.hidden_act = optional<std::string>(j, "hidden_act", llama ? "silu" : "gelu", source);
  c.max_position_embeddings =
      optional<int64_t>(j, "max_position_embeddings", llama ? 2048 : 512, source);
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
  if (llama) {
    parse_llama_fields(j, source, c);
  } else {
    const std::set<std::string> acts = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
    if (!acts.count(c.hidden_act))
      throw Error(fmt::format("{}: hidden_act '{}' is not supported (gelu, gelu_new, relu)",
                              source, c.hidden_act));
  }

  parse_original_head_ids(j, source, c);
  c.kept_heads.assign(c.num_hidden_layers, {});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (int64_t h = 0; h < c.num_attention_heads; ++h) c.kept_heads[l].push_back(h);
  if (llama) parse_headprune_kept_heads(j, source, c);
  if (j.contains("pruned_heads") && !j.at("pruned_heads").is_null()) {
    const auto& pruned = j.at("pruned_heads");
    if (!pruned.is_object())
      throw Error(fmt::format("{}: 'pruned_heads' must be an object layer -> [heads]", source));
    for (const auto& [key, heads] : pruned.items()) {
      const int64_t layer = parse_integer_key(key).value_or(-1);
      if (layer < 0 || layer >= c.num_hidden_layers)
        throw Error(fmt::format("{}: pruned_heads names layer '{}', but the model has {} layers",
                                source, key, c.num_hidden_layers));
      c.remove_heads(layer, json_integer_list(heads, fmt::format("{}: pruned_heads['{}']", source, key)));
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

int64_t ModelConfig::kv_group_size() const {
  return num_key_value_heads > 0 ? num_attention_heads / num_key_value_heads : 1;
}

std::vector<std::vector<int64_t>> ModelConfig::kept_kv_heads() const {
  const int64_t group = kv_group_size();
  std::vector<std::vector<int64_t>> out;
  for (const auto& kept : kept_heads) {
    std::vector<int64_t> kv;
    for (auto h : kept)
      if (kv.empty() || kv.back() != h / group) kv.push_back(h / group);
    out.push_back(kv);
  }
  return out;
}

bool ModelConfig::uniform_groups() const {
  const int64_t group = kv_group_size();
  const auto kv = kept_kv_heads();
  int64_t q_count = -1, kv_count = -1;
  for (size_t l = 0; l < kept_heads.size(); ++l) {
    const auto nq = static_cast<int64_t>(kept_heads[l].size());
    const auto nkv = static_cast<int64_t>(kv[l].size());
    if (l == 0) q_count = nq, kv_count = nkv;
    if (nq != q_count || nkv != kv_count || nkv == 0 || nq % nkv != 0) return false;
    for (auto g : kv[l]) {
      const auto in_group = std::count_if(kept_heads[l].begin(), kept_heads[l].end(),
                                          [&](int64_t h) { return h / group == g; });
      if (in_group != nq / nkv) return false;
    }
  }
  return true;
}

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j = raw;
  if (model_type == "llama") {
    j.erase("pruned_heads");  // transformers' LLaMA cannot prune heads at load time
    if (j.contains("headprune") && j["headprune"].is_object()) j["headprune"].erase("kept_heads");
    if (uniform_groups()) {
      // Kept heads are renumbered 0..n-1 in the weights: a plain HF config describes them.
      j["num_attention_heads"] = kept_heads.empty() ? num_attention_heads
                                                    : static_cast<int64_t>(kept_heads[0].size());
      j["num_key_value_heads"] = kept_heads.empty() ? num_key_value_heads
                                                    : static_cast<int64_t>(kept_kv_heads()[0].size());
      j["head_dim"] = head_dim;
      std::vector<std::vector<int64_t>> ids;
      for (int64_t l = 0; l < num_hidden_layers; ++l) ids.push_back(original_ids(l, kept_heads[l]));
      j["headprune"]["original_head_ids"] = ids;
      j["headprune"]["original_num_attention_heads"] = original_num_attention_heads;
    } else {
      j["headprune"]["kept_heads"] = kept_heads;
    }
    return j;
  }
  nlohmann::json pruned = nlohmann::json::object();
  for (const auto& [layer, heads] : pruned_heads)
    if (!heads.empty()) pruned[std::to_string(layer)] = heads;
  j["pruned_heads"] = pruned;
  return j;
}

}  // namespace headprune::models
