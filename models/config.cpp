#include "models/config.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/config_keys.h"
#include "models/errors.h"
#include "models/integer_key.h"
#include "models/json_get.h"
#include "models/model_family.h"

namespace headprune::models {
namespace {

/// Most heads (layers × heads per layer) a config may describe: 2^20.
constexpr int64_t kMaxHeads = int64_t{1} << 20;

/// `headprune.original_head_ids` / `original_num_attention_heads`: what a uniform LLaMA export
/// renumbered (see ModelConfig::original_head_ids). Absent: the identity.
void parse_original_head_ids(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  c.original_num_attention_heads = c.num_attention_heads;
  c.original_head_ids.assign(c.num_hidden_layers, {});
  for (auto& ids : c.original_head_ids)
    for (int64_t h = 0; h < c.num_attention_heads; ++h) ids.push_back(h);
  const auto note = j.value("headprune", nlohmann::json::object());
  if (!note.is_object() || !note.contains("original_head_ids")) return;
  const auto original = json_optional<int64_t>(note, "original_num_attention_heads", 0, source);
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

/// `headprune.intermediate_sizes`: per-layer FFN widths (ModelConfig::intermediate_sizes).
/// Absent: intermediate_size in every layer.
void parse_intermediate_sizes(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  c.intermediate_sizes.assign(static_cast<size_t>(c.num_hidden_layers), c.intermediate_size);
  const auto note = j.value("headprune", nlohmann::json::object());
  if (!note.is_object() || !note.contains("intermediate_sizes")) return;
  auto sizes = json_integer_list(note.at("intermediate_sizes"), source + ": headprune.intermediate_sizes");
  if (static_cast<int64_t>(sizes.size()) != c.num_hidden_layers)
    throw Error(fmt::format("{}: headprune.intermediate_sizes lists {} layers, the model has {}", source,
                            sizes.size(), c.num_hidden_layers));
  for (size_t l = 0; l < sizes.size(); ++l)
    if (sizes[l] < 0 || sizes[l] > c.intermediate_size)
      throw Error(fmt::format("{}: headprune.intermediate_sizes[{}] is {}, outside 0..intermediate_size {}",
                              source, l, sizes[l], c.intermediate_size));
  c.intermediate_sizes = std::move(sizes);
}

/// `values` without the entries whose `drop` flag is set (empty stays empty).
template <typename T>
std::vector<T> erase_dropped(const std::vector<T>& values, const std::vector<bool>& drop) {
  std::vector<T> out;
  for (size_t l = 0; l < values.size() && l < drop.size(); ++l)
    if (!drop[l]) out.push_back(values[l]);
  return out;
}

/// `j` with each of the family's own spellings of a common key (ModelFamily::attribute_map)
/// also under the canonical name; both spellings present is refused (which would HF use?).
nlohmann::json with_canonical_keys(const nlohmann::json& j, const ModelFamily& family,
                                   const std::string& source) {
  nlohmann::json out = j;
  for (const auto& [canonical, file_key] : family.attribute_map()) {
    if (!j.contains(file_key)) continue;
    if (j.contains(canonical))
      throw Error(fmt::format("{}: both '{}' and '{}' are set; a {} config names it '{}' only",
                              source, canonical, file_key, family.model_type(), file_key));
    out[canonical] = j.at(file_key);
  }
  return out;
}

}  // namespace

int64_t ModelConfig::window_of(int64_t layer) const {
  const auto l = static_cast<size_t>(layer);
  return sliding_window > 0 && l < sliding_layers.size() && sliding_layers[l] ? sliding_window : 0;
}

double ModelConfig::rope_theta_of(int64_t layer) const {
  return rope_local_theta > 0 && window_of(layer) > 0 ? rope_local_theta : rope_theta;
}

bool ModelConfig::has_effective_sliding_window() const {
  for (int64_t l = 0; l < num_hidden_layers; ++l)
    if (window_of(l) > 0 && window_of(l) < max_position_embeddings) return true;
  return false;
}

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

int64_t ModelConfig::usable_positions() const {
  return max_position_embeddings - std::max<int64_t>(position_padding_idx + 1, 0);
}

int64_t ModelConfig::total_heads() const {
  int64_t total = 0;
  for (auto n : heads_per_layer()) total += n;
  return total;
}

ModelConfig ModelConfig::from_json(const nlohmann::json& file, const ModelFamily& family, const std::string& source) {
  if (!file.is_object()) throw Error(fmt::format("{}: expected a JSON object", source));
  ModelConfig c;
  c.raw = file;
  c.model_type = json_required<std::string>(file, "model_type", source);
  if (c.model_type != family.model_type())
    throw Error(fmt::format("{}: model_type '{}' is not a {} config", source, c.model_type, family.model_type()));
  c.model_family = &family;
  check_config_keys(file, family, source);
  const auto j = with_canonical_keys(file, family, source);
  c.vocab_size = json_required<int64_t>(j, "vocab_size", source);
  c.hidden_size = json_required<int64_t>(j, "hidden_size", source);
  c.num_hidden_layers = json_required<int64_t>(j, "num_hidden_layers", source);
  c.num_attention_heads = json_required<int64_t>(j, "num_attention_heads", source);
  c.intermediate_size = json_required<int64_t>(j, "intermediate_size", source);
  c.num_key_value_heads =
      json_optional<int64_t>(j, "num_key_value_heads", c.num_attention_heads, source);
  c.hidden_act = json_optional<std::string>(j, "hidden_act", family.default_hidden_act(), source);
  c.max_position_embeddings = json_optional<int64_t>(j, "max_position_embeddings",
                                                     family.default_max_position_embeddings(), source);
  c.pad_token_id = json_optional<int64_t>(j, "pad_token_id", 0, source);
  for (auto [name, value] : {std::pair{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
                             {"num_hidden_layers", c.num_hidden_layers},
                             {"num_attention_heads", c.num_attention_heads},
                             {"intermediate_size", c.intermediate_size}})
    if (value <= 0) throw Error(fmt::format("{}: '{}' must be positive, got {}", source, name, value));
  // Per-layer head lists are allocated from these counts before any weight is read: refuse
  // counts no checkpoint has (the largest real models have ~16k heads), so that a corrupt
  // config is an error, not a multi-gigabyte allocation (fuzz finding, config_json).
  if (c.num_attention_heads > kMaxHeads || c.num_hidden_layers > kMaxHeads ||
      c.num_hidden_layers * c.num_attention_heads > kMaxHeads)
    throw Error(fmt::format("{}: num_hidden_layers {} x num_attention_heads {} is more heads than "
                            "headprune handles ({}); is config.json corrupt?",
                            source, c.num_hidden_layers, c.num_attention_heads, kMaxHeads));
  if (j.contains("head_dim") && !j.at("head_dim").is_null()) {
    c.head_dim = json_required<int64_t>(j, "head_dim", source);
  } else if (const auto fallback = family.default_head_dim()) {
    c.head_dim = *fallback;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      throw Error(fmt::format("{}: hidden_size {} is not divisible by num_attention_heads {}",
                              source, c.hidden_size, c.num_attention_heads));
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  family.parse_fields(j, source, c);

  parse_original_head_ids(j, source, c);
  c.kept_heads.assign(c.num_hidden_layers, {});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (int64_t h = 0; h < c.num_attention_heads; ++h) c.kept_heads[l].push_back(h);
  family.parse_head_sets(j, source, c);
  parse_intermediate_sizes(j, source, c);
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

void ModelConfig::remove_layers(const std::vector<int64_t>& layers) {
  std::vector<bool> drop(static_cast<size_t>(num_hidden_layers), false);
  for (auto l : layers) {
    if (l < 0 || l >= num_hidden_layers || drop[static_cast<size_t>(l)])
      throw Error(fmt::format("cannot remove layer {}: {} (the model has layers 0..{})", l,
                              l < 0 || l >= num_hidden_layers ? "out of range" : "listed twice",
                              num_hidden_layers - 1));
    drop[static_cast<size_t>(l)] = true;
  }
  if (!layers.empty() && static_cast<int64_t>(layers.size()) == num_hidden_layers)
    throw Error(fmt::format("cannot remove all {} layers", num_hidden_layers));
  std::vector<std::vector<int64_t>> kept, ids;
  std::map<int64_t, std::vector<int64_t>> pruned;
  for (int64_t l = 0; l < num_hidden_layers; ++l) {
    if (drop[static_cast<size_t>(l)]) continue;
    const auto next = static_cast<int64_t>(kept.size());
    if (auto it = pruned_heads.find(l); it != pruned_heads.end()) pruned[next] = it->second;
    kept.push_back(kept_heads[static_cast<size_t>(l)]);
    if (static_cast<size_t>(l) < original_head_ids.size()) ids.push_back(original_head_ids[static_cast<size_t>(l)]);
  }
  kept_heads = std::move(kept);
  original_head_ids = std::move(ids);
  sliding_layers = erase_dropped(sliding_layers, drop);
  intermediate_sizes = erase_dropped(intermediate_sizes, drop);
  if (raw.contains("layer_types") && raw["layer_types"].is_array() && raw["layer_types"].size() == drop.size()) {
    auto types = nlohmann::json::array();
    for (size_t l = 0; l < drop.size(); ++l)
      if (!drop[l]) types.push_back(raw["layer_types"][l]);
    raw["layer_types"] = types;
  }
  pruned_heads = std::move(pruned);
  num_hidden_layers = static_cast<int64_t>(kept_heads.size());
  const auto& file_keys = family().attribute_map();
  const auto layers_key = file_keys.find("num_hidden_layers");
  raw[layers_key == file_keys.end() ? "num_hidden_layers" : layers_key->second] = num_hidden_layers;
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

const ModelFamily& ModelConfig::family() const {
  if (!model_family) throw std::logic_error("ModelConfig::family: the config was not parsed by ModelConfig::from_json");
  return *model_family;
}

int64_t ModelConfig::ffn_width(int64_t layer) const {
  return intermediate_sizes.empty() ? intermediate_size : intermediate_sizes.at(static_cast<size_t>(layer));
}

bool ModelConfig::plain_ffn() const {
  return std::adjacent_find(intermediate_sizes.begin(), intermediate_sizes.end(), std::not_equal_to<>()) ==
             intermediate_sizes.end() &&
         (intermediate_sizes.empty() || intermediate_sizes.front() > 0);
}

void ModelConfig::set_ffn_width(int64_t layer, int64_t width) {
  if (layer < 0 || layer >= num_hidden_layers)
    throw Error(fmt::format("layer {} is out of range (the model has {} layers)", layer, num_hidden_layers));
  if (intermediate_sizes.empty()) intermediate_sizes.assign(static_cast<size_t>(num_hidden_layers), intermediate_size);
  auto& current = intermediate_sizes.at(static_cast<size_t>(layer));
  if (width < 0 || width > current)
    throw Error(fmt::format("layer {}: FFN width {} is outside 0..{}", layer, width, current));
  current = width;
}

nlohmann::json ModelConfig::to_json() const {
  auto j = family().to_json(*this);
  if (j.contains("headprune") && j["headprune"].is_object()) j["headprune"].erase("intermediate_sizes");
  if (intermediate_sizes.empty() || intermediate_sizes == std::vector<int64_t>(intermediate_sizes.size(), intermediate_size))
    return j;
  if (plain_ffn()) {  // a plain config: every layer has the same, smaller width
    const auto& file_keys = family().attribute_map();
    const auto key = file_keys.find("intermediate_size");
    j[key == file_keys.end() ? "intermediate_size" : key->second] = intermediate_sizes.front();
    return j;
  }
  j["headprune"]["intermediate_sizes"] = intermediate_sizes;
  return j;
}

}  // namespace headprune::models
