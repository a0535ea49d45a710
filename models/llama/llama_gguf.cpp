#include "models/llama/llama_gguf.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/formats/llama2c.h"
#include "models/llama/llama_gguf_names.h"

namespace headprune::models::llama {
namespace {

/// Top-level metadata namespaces read elsewhere or descriptive only.
bool descriptive_namespace(const std::string& key) {
  for (const char* prefix : {"general.", "tokenizer.", "quantize."})
    if (key.rfind(prefix, 0) == 0) return true;
  return false;
}

const GgufValue& required(const GgufFile& f, const std::string& key) {
  const auto* v = f.header.find(key);
  if (!v) gguf_error(f.path, fmt::format("metadata key '{}' is missing (needed for the model's config)", key));
  return *v;
}

bool is_integer(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16: case GgufValueType::INT16:
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::UINT64: case GgufValueType::INT64:
      return true;
    default: return false;
  }
}

/// The HF name of GGUF tensor `name` under `layout`, or "" when it has no such tensor: global
/// and per-layer weights by the tables, per-layer biases of the layout's bias_parts.
std::string hf_name(const std::string& name, int64_t layers, const GgufDecoderLayout& layout) {
  for (const auto& [gguf, hf] : kGgufGlobalNames)
    if (name == gguf) return hf;
  int64_t layer = -1;
  char part[32] = {0};
  char kind[8] = {0};
  int consumed = 0;
  if (std::sscanf(name.c_str(), "blk.%ld.%31[a-z_].%7[a-z]%n", &layer, part, kind, &consumed) != 3 ||
      consumed != static_cast<int>(name.size()) || layer < 0 || layer >= layers)
    return "";
  const std::string suffix = kind;
  if (suffix != "weight" && !(suffix == "bias" && layout.bias_parts.count(part))) return "";
  for (const auto& [gguf, hf] : layout.layer_names)
    if (part == gguf) return fmt::format("model.layers.{}.{}.{}", layer, hf, suffix);
  return "";
}

void check_architecture_keys(const GgufFile& f, const GgufDecoderLayout& layout) {
  const auto* arch = f.header.find("general.architecture");
  if (!arch || arch->type != GgufValueType::STRING)
    gguf_error(f.path, "metadata 'general.architecture' is missing: not a llama.cpp model file");
  if (arch->value.get<std::string>() != layout.architecture)
    gguf_error(f.path, fmt::format("architecture '{}' is not supported here (this reader maps '{}')",
                                   arch->value.get<std::string>(), layout.architecture));
  for (const auto& [key, value] : f.header.metadata) {
    if (descriptive_namespace(key) || layout.modelled_keys.count(key)) continue;
    if (key == layout.architecture + ".rope.scaling.type" && value.value == "none") continue;
    gguf_error(f.path, fmt::format("metadata '{}' is not modelled here (RoPE scaling, experts, split "
                                   "files and other variants are refused rather than ignored)",
                                   key));
  }
}

/// LlamaConfig of a `llama` file: attention_bias when it has q/k/v and output biases, mlp_bias
/// with MLP biases. q/k/v biases without an output bias are a Qwen2 (Qwen2Attention) whose
/// heads no longer fill the width, which headprune writes as `llama` (llama.cpp's qwen2 needs
/// heads × head_dim = width): read back as Qwen2, LlamaConfig having no such option.
nlohmann::json llama_config_json(const GgufFile& f, const std::set<std::string>& names) {
  const bool qkv_bias = names.count("model.layers.0.self_attn.q_proj.bias") > 0;
  const bool o_bias = names.count("model.layers.0.self_attn.o_proj.bias") > 0;
  const bool qwen2 = qkv_bias && !o_bias;
  auto j = gguf_decoder_config(f, "llama", names);
  j["architectures"] = {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  j["model_type"] = qwen2 ? "qwen2" : "llama";
  if (!qwen2) {
    j["attention_bias"] = o_bias;
    j["mlp_bias"] = names.count("model.layers.0.mlp.gate_proj.bias") > 0;
  }
  if (!j.contains("bos_token_id")) j["bos_token_id"] = 1;
  if (!j.contains("eos_token_id")) j["eos_token_id"] = 2;
  if (!j.contains("pad_token_id")) j["pad_token_id"] = j["eos_token_id"];
  return j;
}

/// Permutes q/k rows back to HF's rotary halves and checks their shapes.
void permute_query_key_rows(GgufModel& out) {
  const auto& c = out.config;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const auto key = [l](const char* proj) { return fmt::format("model.layers.{}.self_attn.{}.weight", l, proj); };
    for (auto [proj, heads] : {std::pair{"q_proj", c.num_attention_heads}, std::pair{"k_proj", c.num_key_value_heads}}) {
      auto it = out.weights.find(key(proj));
      if (it == out.weights.end()) gguf_error(out.gguf.path, fmt::format("tensor '{}' is missing", key(proj)));
      if (it->second.dim() != 2 || it->second.size(0) != heads * c.head_dim)
        gguf_error(out.gguf.path, fmt::format("tensor '{}' has shape [{}], expected {} rows ({} heads of {})", key(proj),
                                              fmt::join(it->second.sizes(), ", "), heads * c.head_dim, heads, c.head_dim));
      it->second = permute_rotary_rows(it->second, heads, c.head_dim);
      const auto bias = out.weights.find(fmt::format("model.layers.{}.self_attn.{}.bias", l, proj));
      if (bias != out.weights.end() && bias->second.numel() == heads * c.head_dim)
        bias->second = permute_rotary_rows(bias->second.unsqueeze(1), heads, c.head_dim).squeeze(1);
    }
  }
}

}  // namespace

const GgufDecoderLayout& llama_layout() {
  static const GgufDecoderLayout layout = [] {
    GgufDecoderLayout l;
    l.architecture = "llama";
    l.family = "LLaMA";
    for (const auto& [gguf, hf] : kGgufLayerNames) l.layer_names.emplace_back(gguf, hf);
    l.modelled_keys = decoder_gguf_keys("llama");
    l.bias_parts = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    l.config_json = llama_config_json;
    l.uneven_as_deci = true;
    return l;
  }();
  return layout;
}

int64_t gguf_integer(const GgufFile& f, const std::string& key) {
  const auto& v = required(f, key);
  if (!is_integer(v))
    gguf_error(f.path, fmt::format("metadata '{}' must be one integer (per-layer arrays are not read for this "
                                   "architecture)", key));
  return v.value.get<int64_t>();
}

int64_t gguf_integer_or(const GgufFile& f, const std::string& key, int64_t fallback) {
  return f.header.find(key) ? gguf_integer(f, key) : fallback;
}

double gguf_real_or(const GgufFile& f, const std::string& key, double fallback) {
  const auto* v = f.header.find(key);
  if (!v) return fallback;
  if (v->type == GgufValueType::FLOAT32)
    return std::strtod(fmt::format("{}", v->value.get<float>()).c_str(), nullptr);
  if (v->type == GgufValueType::FLOAT64) return v->value.get<double>();
  gguf_error(f.path, fmt::format("metadata '{}' must be a float", key));
}

int64_t gguf_head_dim(const GgufFile& f, const std::string& arch) {
  const auto hidden = gguf_integer(f, arch + ".embedding_length");
  const auto heads = gguf_integer(f, arch + ".attention.head_count");
  const bool explicit_head_dim = f.header.find(arch + ".attention.key_length") != nullptr;
  if (heads <= 0 || (!explicit_head_dim && hidden % heads != 0))
    gguf_error(f.path, fmt::format("head_count {} does not divide embedding_length {} and no "
                                   "attention.key_length gives the head size", heads, hidden));
  const auto head_dim = gguf_integer_or(f, arch + ".attention.key_length", hidden / heads);
  if (gguf_integer_or(f, arch + ".attention.value_length", head_dim) != head_dim)
    gguf_error(f.path, "attention.value_length differs from key_length: not a LLaMA-style layout");
  if (gguf_integer_or(f, arch + ".rope.dimension_count", head_dim) != head_dim)
    gguf_error(f.path, fmt::format("rope.dimension_count {} differs from head_dim {}: partial rotary "
                                   "embeddings are not modelled",
                                   gguf_integer(f, arch + ".rope.dimension_count"), head_dim));
  return head_dim;
}

int64_t gguf_vocab_size(const GgufFile& f, const std::string& arch) {
  const auto* tokens = f.header.find("tokenizer.ggml.tokens");
  return gguf_integer_or(f, arch + ".vocab_size", tokens ? static_cast<int64_t>(tokens->value.size()) : 0);
}

std::set<std::string> decoder_gguf_keys(const std::string& arch) {
  std::set<std::string> keys;
  for (const char* key : {"context_length", "embedding_length", "block_count", "feed_forward_length",
                          "attention.head_count", "attention.head_count_kv", "rope.freq_base",
                          "attention.layer_norm_rms_epsilon", "rope.dimension_count", "vocab_size",
                          "attention.key_length", "attention.value_length"})
    keys.insert(fmt::format("{}.{}", arch, key));
  return keys;
}

nlohmann::json gguf_decoder_config(const GgufFile& f, const std::string& arch, const std::set<std::string>& names) {
  const auto key = [&](const char* k) { return fmt::format("{}.{}", arch, k); };
  const auto heads = gguf_integer(f, key("attention.head_count"));
  nlohmann::json j = {{"vocab_size", gguf_vocab_size(f, arch)},
                      {"hidden_size", gguf_integer(f, key("embedding_length"))},
                      {"intermediate_size", gguf_integer(f, key("feed_forward_length"))},
                      {"num_hidden_layers", gguf_integer(f, key("block_count"))},
                      {"num_attention_heads", heads},
                      {"num_key_value_heads", gguf_integer_or(f, key("attention.head_count_kv"), heads)},
                      {"head_dim", gguf_head_dim(f, arch)},
                      {"max_position_embeddings", gguf_integer(f, key("context_length"))},
                      {"hidden_act", "silu"},
                      {"rms_norm_eps", gguf_real_or(f, key("attention.layer_norm_rms_epsilon"), 1e-6)},
                      {"rope_theta", gguf_real_or(f, key("rope.freq_base"), 10000.0)},
                      {"tie_word_embeddings", names.count("lm_head.weight") == 0},
                      {"torch_dtype", "float32"}};
  for (const char* id : {"bos", "eos", "padding"})
    if (f.header.find(fmt::format("tokenizer.ggml.{}_token_id", id)))
      j[fmt::format("{}_token_id", id == std::string("padding") ? "pad" : id)] =
          gguf_integer(f, fmt::format("tokenizer.ggml.{}_token_id", id));
  return j;
}

const std::set<std::string>& modelled_gguf_keys() { return llama_layout().modelled_keys; }

GgufModel read_llama_gguf(GgufFile file, ConfigReader read_config) {
  return read_decoder_gguf(std::move(file), llama_layout(), read_config);
}

GgufModel read_decoder_gguf(GgufFile file, const GgufDecoderLayout& layout, ConfigReader read_config) {
  GgufModel out;
  out.gguf = std::move(file);
  const auto& f = out.gguf;
  const auto& path = f.path;
  check_architecture_keys(f, layout);
  const auto layers = gguf_integer(f, layout.architecture + ".block_count");
  std::set<std::string> names;
  for (const auto& info : f.header.tensors) {
    const auto name = hf_name(info.name, layers, layout);
    if (name.empty())
      gguf_error(path, fmt::format("tensor '{}' is not part of the {} architecture as mapped here "
                                   "(biases it does not model, RoPE frequency tables and other extras are refused)",
                                   info.name, layout.family));
    names.insert(name);
    auto tensor = read_gguf_tensor(f, info);
    const std::string suffix = "norm.weight";
    const bool norm = name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (layout.norms_hold_one_plus_weight && norm) tensor = tensor - 1.0F;
    out.weights[name] = tensor;
    out.source_types[name] = ggml_type_traits(info.type).name;
  }
  out.config_json = layout.config_json(f, names);
  out.config = read_config(out.config_json, path.string());
  if (layout.permute_qk) permute_query_key_rows(out);
  return out;
}

}  // namespace headprune::models::llama
