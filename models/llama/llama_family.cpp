#include "models/llama/llama_family.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/json_get.h"
#include "models/remote_code.h"

namespace headprune::generated {
/// models/llama/modeling_headprune_llama.py, embedded by CMakeLists.txt (headprune_embed_text).
extern const char* const kModelingHeadpruneLlamaPy;
}  // namespace headprune::generated

namespace headprune::models::llama {

/// The keys of HF LlamaConfig (names and defaults); other LLaMA-style families call it first.
void parse_llama_fields(const nlohmann::json& j, const std::string& source, ModelConfig& c) {
  // LlamaMLP computes ACT2FN[hidden_act]: SwiGLU, or GeGLU with the tanh GELU (Gemma's).
  if (c.hidden_act != "silu" && c.hidden_act != "gelu_pytorch_tanh")
    throw Error(fmt::format("{}: hidden_act '{}' is not supported for {} (silu, gelu_pytorch_tanh)", source,
                            c.hidden_act, c.model_type));
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(fmt::format("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                            source, c.num_attention_heads, c.num_key_value_heads));
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    throw Error(fmt::format("{}: head_dim {} must be positive and even (rotary embedding)", source,
                            c.head_dim));
  c.rms_norm_eps = json_optional<double>(j, "rms_norm_eps", 1e-6, source);
  c.rope_theta = json_optional<double>(j, "rope_theta", 10000.0, source);
  // transformers 5 writes RoPE as rope_parameters (older: rope_scaling); only the default
  // rotary embedding is implemented.
  for (const char* key : {"rope_scaling", "rope_parameters"})
    if (j.contains(key) && !j.at(key).is_null()) parse_rope(j.at(key), key, source, c);
  c.tie_word_embeddings = json_optional<bool>(j, "tie_word_embeddings", false, source);
  c.attention_bias = json_optional<bool>(j, "attention_bias", false, source);
  c.mlp_bias = json_optional<bool>(j, "mlp_bias", false, source);
  c.bos_token_id = json_optional<int64_t>(j, "bos_token_id", 1, source);
  // Some configs list several end tokens; the first is the one generation stops at.
  if (j.contains("eos_token_id") && j.at("eos_token_id").is_array() && !j.at("eos_token_id").empty())
    c.eos_token_id = json_integer(j.at("eos_token_id").at(0), source + ": eos_token_id[0]");
  else
    c.eos_token_id = json_optional<int64_t>(j, "eos_token_id", 2, source);
}

void parse_rope(const nlohmann::json& rope, const std::string& where, const std::string& source, ModelConfig& c) {
  if (!rope.is_object() || rope.value("rope_type", "") != "llama3") {
    c.rope_theta = plain_rope_theta(rope, where, "", c.rope_theta, source);
    return;
  }
  for (const auto& [name, value] : rope.items())
    if (name != "rope_type" && name != "rope_theta" && name != "factor" && name != "low_freq_factor" &&
        name != "high_freq_factor" && name != "original_max_position_embeddings")
      throw Error(fmt::format("{}: {}.{} is not supported (llama3 RoPE takes rope_theta, factor, low_freq_factor, "
                              "high_freq_factor, original_max_position_embeddings)", source, where, name));
  auto& s = c.rope_scaling;
  const auto in = source + ": " + where;
  s.llama3 = true;
  c.rope_theta = json_optional<double>(rope, "rope_theta", c.rope_theta, in);
  s.factor = json_required<double>(rope, "factor", in);
  s.low_freq_factor = json_required<double>(rope, "low_freq_factor", in);
  s.high_freq_factor = json_required<double>(rope, "high_freq_factor", in);
  s.original_max_position_embeddings = json_required<int64_t>(rope, "original_max_position_embeddings", in);
  if (!(s.factor >= 1) || !(s.high_freq_factor > s.low_freq_factor) || !(s.low_freq_factor > 0) ||
      s.original_max_position_embeddings <= 0)
    throw Error(fmt::format("{}: {} (llama3) needs factor >= 1, high_freq_factor > low_freq_factor > 0 and a positive "
                            "original_max_position_embeddings, got {}", source, where, rope.dump()));
}

double plain_rope_theta(const nlohmann::json& rope, const std::string& where, const std::string& absent_type,
                        double fallback, const std::string& source) {
  if (!rope.is_object() || rope.value("rope_type", absent_type) != "default")
    throw Error(fmt::format("{}: {} {} is not supported (only plain RoPE, rope_type \"default\")", source, where,
                            rope.dump()));
  for (const auto& [name, value] : rope.items())
    if (name != "rope_type" && name != "rope_theta")
      throw Error(fmt::format("{}: {}.{} is not supported (plain RoPE takes rope_theta only)", source, where, name));
  return json_optional<double>(rope, "rope_theta", fallback, source);
}

void parse_sliding_window(const nlohmann::json& j, const std::string& source, int64_t absent_default,
                          ModelConfig& c) {
  c.sliding_window = absent_default;
  if (j.contains("sliding_window")) {
    const auto& value = j.at("sliding_window");
    c.sliding_window = value.is_null() ? 0 : json_integer(value, source + ": sliding_window");
    if (!value.is_null() && c.sliding_window <= 0)
      throw Error(fmt::format("{}: sliding_window must be a positive number of positions or null, got {}",
                              source, c.sliding_window));
  }
  c.sliding_layers.assign(static_cast<size_t>(c.sliding_window > 0 ? c.num_hidden_layers : 0), true);
}

double nested_rope_theta(const nlohmann::json& j, const std::string& layer_type, double fallback,
                         const std::string& source) {
  if (!j.contains("rope_parameters") || j.at("rope_parameters").is_null()) return fallback;
  const auto& all = j.at("rope_parameters");
  if (!all.is_object() || !all.contains(layer_type) || all.at(layer_type).is_null()) return fallback;
  return plain_rope_theta(all.at(layer_type), "rope_parameters." + layer_type, "default", fallback, source);
}

bool read_layer_types(const nlohmann::json& j, const std::string& source, const std::string& family,
                      ModelConfig& c) {
  if (!j.contains("layer_types") || j.at("layer_types").is_null()) return false;
  const auto& types = j.at("layer_types");
  if (!types.is_array() || static_cast<int64_t>(types.size()) != c.num_hidden_layers)
    throw Error(fmt::format("{}: layer_types must list {} layer types (one per layer)", source, c.num_hidden_layers));
  c.sliding_layers.assign(types.size(), false);
  for (size_t l = 0; l < types.size(); ++l) {
    if (types[l] != "sliding_attention" && types[l] != "full_attention")
      throw Error(fmt::format("{}: layer_types[{}] is {}; {} has sliding_attention and full_attention", source, l,
                              types[l].dump(), family));
    c.sliding_layers[l] = types[l] == "sliding_attention";
  }
  return true;
}

nlohmann::json layer_types_json(const ModelConfig& c) {
  auto types = nlohmann::json::array();
  for (bool sliding : c.sliding_layers) types.push_back(sliding ? "sliding_attention" : "full_attention");
  return types;
}

std::string attention_span(const ModelConfig& c) {
  return c.sliding_window > 0 ? fmt::format("a sliding window of {} positions", c.sliding_window)
                              : std::string("full causal attention");
}

namespace {

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

/// Query heads every layer of a uniform export keeps.
int64_t uniform_heads(const ModelConfig& c) { return static_cast<int64_t>(c.kept_heads.front().size()); }

/// Whether what `rule` asks of a uniform export's head count holds: transformers 5's LlamaConfig
/// needs it to divide hidden_size even with an explicit head_dim; transformers 4's Qwen2 / Phi-3
/// take the head size as hidden_size / heads.
bool head_count_fits(NativeHeadDim rule, const ModelConfig& c) {
  switch (rule) {
    case NativeHeadDim::kDividesHiddenIn5: return c.hidden_size % uniform_heads(c) == 0;
    case NativeHeadDim::kFillsHiddenIn4: return uniform_heads(c) * c.head_dim == c.hidden_size;
    case NativeHeadDim::kExplicit: return true;
  }
  return false;
}

/// The layout warning of a uniform export that one major version of transformers loads
/// natively and the other refuses (`rule` says which), pointing to `route`.
std::string partial_native_warning(NativeHeadDim rule, const ModelConfig& c, const std::string& hf_class,
                                   const std::string& v4_reader, const std::string& route) {
  if (rule == NativeHeadDim::kDividesHiddenIn5)
    return fmt::format(
        "every layer keeps {} query heads, which do not divide hidden_size {}: {} loads this "
        "config natively (explicit head_dim), transformers 5's {} config refuses it (\"hidden "
        "size is not a multiple of the number of attention heads\"); {}; keep a head count that "
        "divides {} for a folder both load natively",
        uniform_heads(c), c.hidden_size, v4_reader, hf_class, route, c.hidden_size);
  return fmt::format(
      "every layer keeps {} query heads of {}, not hidden_size {}: transformers 5's {} loads "
      "this config natively (explicit head_dim), 4.x's refuses it (its head size is hidden_size "
      "/ num_attention_heads); {}",
      uniform_heads(c), c.head_dim, c.hidden_size, hf_class, route);
}

}  // namespace

LlamaFamily::LlamaFamily(std::string stem, std::string display_name, NativeHeadDim head_dim_rule)
    : stem_(std::move(stem)),
      display_name_(std::move(display_name)),
      head_dim_rule_(head_dim_rule),
      remote_code_{"modeling_headprune_llama.py", generated::kModelingHeadpruneLlamaPy,
                   nlohmann::json{{"AutoConfig", fmt::format("modeling_headprune_llama.Headprune{}Config", stem_)},
                                  {"AutoModelForCausalLM",
                                   fmt::format("modeling_headprune_llama.Headprune{}ForCausalLM", stem_)}},
                   {}} {}

std::string LlamaFamily::model_type() const { return "llama"; }

std::string LlamaFamily::description(const ModelConfig& c) const {
  return fmt::format("LLaMA decoder (HF LlamaForCausalLM): {} query heads share {} KV heads "
                     "({} per group) in each layer",
                     c.num_attention_heads, c.num_key_value_heads, c.kv_group_size());
}

const std::set<std::string>& LlamaFamily::modelled_keys() const {
  static const std::set<std::string> keys = {
      "num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
      "tie_word_embeddings", "attention_bias", "mlp_bias", "bos_token_id", "eos_token_id"};
  return keys;
}

void LlamaFamily::parse_fields(const nlohmann::json& j, const std::string& source,
                               ModelConfig& c) const {
  parse_llama_fields(j, source, c);
}
void LlamaFamily::parse_head_sets(const nlohmann::json& j, const std::string& source,
                                  ModelConfig& c) const {
  parse_headprune_kept_heads(j, source, c);
}

nlohmann::json LlamaFamily::to_json(const ModelConfig& c) const {
  nlohmann::json j = c.raw;
  j.erase("pruned_heads");  // transformers' LLaMA cannot prune heads at load time
  j.erase("auto_map");      // an earlier export's; the export adds it when needs_remote_code
  if (j.contains("headprune") && j["headprune"].is_object()) j["headprune"].erase("kept_heads");
  j["head_dim"] = c.head_dim;  // the remote code reads it; Phi-3's configs have none
  if (!c.uniform_groups()) {
    j["headprune"]["kept_heads"] = c.kept_heads;
    return j;
  }
  j["num_attention_heads"] = c.kept_heads.empty() ? c.num_attention_heads
                                                  : static_cast<int64_t>(c.kept_heads[0].size());
  j["num_key_value_heads"] = c.kept_heads.empty() ? c.num_key_value_heads
                                                  : static_cast<int64_t>(c.kept_kv_heads()[0].size());
  std::vector<std::vector<int64_t>> ids;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) ids.push_back(c.original_ids(l, c.kept_heads[l]));
  j["headprune"]["original_head_ids"] = ids;
  j["headprune"]["original_num_attention_heads"] = c.original_num_attention_heads;
  return j;
}

bool LlamaFamily::has_qkv_bias(const ModelConfig& c) const { return c.attention_bias || c.qkv_bias; }
bool LlamaFamily::has_output_bias(const ModelConfig& c) const { return c.attention_bias; }
bool LlamaFamily::has_ffn_bias(const ModelConfig& c) const { return c.mlp_bias; }

std::string LlamaFamily::empty_layer_warning(int64_t layer) const {
  return fmt::format(
      "layer {} has no heads left: its attention adds nothing ({} has no o_proj bias); "
      "headprune loads this checkpoint, transformers' own {} cannot hold an empty "
      "layer (trust_remote_code=True loads it with modeling_headprune_llama.py)",
      layer, display_name(), hf_class());
}
std::optional<std::string> LlamaFamily::layout_warning(const ModelConfig& c) const {
  if (!c.uniform_groups())
    return fmt::format(
        "the layers keep different query/KV head counts: transformers' {}, vLLM "
        "and llama.cpp's converters cannot build it; {}; for a plain {} config every layer "
        "must keep the same heads per KV group (--uniform-layers, or apply --remove-heads with "
        "the same pattern in every layer)",
        hf_class(), remote_code_route(), display_name());
  if (uniform_heads(c) > 0 && !head_count_fits(head_dim_rule_, c))
    return partial_native_warning(head_dim_rule_, c, hf_class(), partial_native_reader(), remote_code_route());
  return {};
}
std::string LlamaFamily::export_note(const ModelConfig& c) const {
  if (loads_natively(c))
    return fmt::format("a standard {} config: every layer keeps the same query/KV heads, renumbered "
                       "0..n-1; {} load it natively",
                       display_name(), native_readers());
  const auto layout = !c.uniform_groups()            ? std::string("layers keep different heads (headprune.kept_heads); ")
                      : c.kept_heads.front().empty() ? std::string("no layer keeps a head; ")
                                                     : fmt::format("a standard {} config (explicit head_dim) that {} "
                                                                   "loads natively; ",
                                                                   display_name(), partial_native_reader());
  return layout + remote_code_route();
}
bool LlamaFamily::needs_remote_code(const ModelConfig& c) const { return !loads_natively(c); }
bool LlamaFamily::loads_natively(const ModelConfig& c) const {
  return c.uniform_groups() && uniform_heads(c) > 0 && head_count_fits(head_dim_rule_, c) && c.plain_ffn();
}
std::string LlamaFamily::partial_native_reader() const {
  return head_dim_rule_ == NativeHeadDim::kFillsHiddenIn4 ? "transformers 5" : "transformers " + v4_versions();
}
std::string LlamaFamily::native_readers() const { return fmt::format("transformers {} and 5.x", v4_versions()); }

std::string LlamaFamily::remote_code_route() const {
  return fmt::format("AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True) loads it in "
                     "{} ({}, registered in auto_map)",
                     native_readers(), remote_code()->auto_map.at("AutoModelForCausalLM").get<std::string>());
}

const ModelFamily& family() {
  static const LlamaFamily instance;
  return instance;
}

}  // namespace headprune::models::llama
