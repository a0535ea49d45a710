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

constexpr const char* kArchitecture = "llama";

/// Top-level metadata namespaces read elsewhere or descriptive only.
bool descriptive_namespace(const std::string& key) {
  for (const char* prefix : {"general.", "tokenizer.", "quantize."})
    if (key.rfind(prefix, 0) == 0) return true;
  return false;
}

const GgufValue& required(const GgufFile& f, const std::string& key) {
  const auto* v = f.header.find(key);
  if (!v) gguf_error(f.path, fmt::format("metadata key '{}' is missing (needed for the LLaMA config)", key));
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

int64_t integer(const GgufFile& f, const std::string& key) {
  const auto& v = required(f, key);
  if (!is_integer(v))
    gguf_error(f.path, fmt::format("metadata '{}' must be one integer (per-layer arrays are not read for "
                                   "architecture 'llama')", key));
  return v.value.get<int64_t>();
}

int64_t integer_or(const GgufFile& f, const std::string& key, int64_t fallback) {
  return f.header.find(key) ? integer(f, key) : fallback;
}

/// A float metadata value as its shortest decimal (float32 1e-5 is stored as 9.99999975e-06).
double real_or(const GgufFile& f, const std::string& key, double fallback) {
  const auto* v = f.header.find(key);
  if (!v) return fallback;
  if (v->type == GgufValueType::FLOAT32)
    return std::strtod(fmt::format("{}", v->value.get<float>()).c_str(), nullptr);
  if (v->type == GgufValueType::FLOAT64) return v->value.get<double>();
  gguf_error(f.path, fmt::format("metadata '{}' must be a float", key));
}

/// The HF name of GGUF tensor `name`, or "" when the LLaMA architecture has no such tensor.
std::string hf_name(const std::string& name, int64_t layers) {
  for (const auto& [gguf, hf] : kGgufGlobalNames)
    if (name == gguf) return hf;
  int64_t layer = -1;
  char part[32] = {0};
  int consumed = 0;
  if (std::sscanf(name.c_str(), "blk.%ld.%31[a-z_].weight%n", &layer, part, &consumed) != 2 ||
      consumed != static_cast<int>(name.size()) || layer < 0 || layer >= layers)
    return "";
  for (const auto& [gguf, hf] : kGgufLayerNames)
    if (std::string(part) == gguf) return fmt::format("model.layers.{}.{}.weight", layer, hf);
  return "";
}

void check_architecture_keys(const GgufFile& f) {
  const auto* arch = f.header.find("general.architecture");
  if (!arch || arch->type != GgufValueType::STRING)
    gguf_error(f.path, "metadata 'general.architecture' is missing: not a llama.cpp model file");
  if (arch->value.get<std::string>() != kArchitecture)
    gguf_error(f.path, fmt::format("architecture '{}' is not supported (supported: {}; LLaMA-like "
                                   "models with other names are not mapped)",
                                   arch->value.get<std::string>(), kArchitecture));
  for (const auto& [key, value] : f.header.metadata) {
    if (descriptive_namespace(key) || modelled_gguf_keys().count(key)) continue;
    if (key == "llama.rope.scaling.type" && value.value == "none") continue;
    gguf_error(f.path, fmt::format("metadata '{}' is not modelled here (RoPE scaling, experts, split "
                                   "files and other variants are refused rather than ignored)",
                                   key));
  }
}

nlohmann::json config_json(const GgufFile& f, bool tied) {
  const auto hidden = integer(f, "llama.embedding_length");
  const auto heads = integer(f, "llama.attention.head_count");
  const bool explicit_head_dim = f.header.find("llama.attention.key_length") != nullptr;
  if (heads <= 0 || (!explicit_head_dim && hidden % heads != 0))
    gguf_error(f.path, fmt::format("head_count {} does not divide embedding_length {} and no "
                                   "attention.key_length gives the head size", heads, hidden));
  const auto head_dim = integer_or(f, "llama.attention.key_length", hidden / heads);
  if (integer_or(f, "llama.attention.value_length", head_dim) != head_dim)
    gguf_error(f.path, "attention.value_length differs from key_length: not a LLaMA layout");
  if (integer_or(f, "llama.rope.dimension_count", head_dim) != head_dim)
    gguf_error(f.path, fmt::format("rope.dimension_count {} differs from head_dim {}: partial rotary "
                                   "embeddings are not modelled",
                                   integer(f, "llama.rope.dimension_count"), head_dim));
  const auto* tokens = f.header.find("tokenizer.ggml.tokens");
  const int64_t n_tokens = tokens ? static_cast<int64_t>(tokens->value.size()) : 0;
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", integer_or(f, "llama.vocab_size", n_tokens)},
          {"hidden_size", hidden},
          {"intermediate_size", integer(f, "llama.feed_forward_length")},
          {"num_hidden_layers", integer(f, "llama.block_count")},
          {"num_attention_heads", heads},
          {"num_key_value_heads", integer_or(f, "llama.attention.head_count_kv", heads)},
          {"head_dim", head_dim},
          {"max_position_embeddings", integer(f, "llama.context_length")},
          {"hidden_act", "silu"},
          {"rms_norm_eps", real_or(f, "llama.attention.layer_norm_rms_epsilon", 1e-6)},
          {"rope_theta", real_or(f, "llama.rope.freq_base", 10000.0)},
          {"tie_word_embeddings", tied},
          {"attention_bias", false},
          {"mlp_bias", false},
          {"bos_token_id", integer_or(f, "tokenizer.ggml.bos_token_id", 1)},
          {"eos_token_id", integer_or(f, "tokenizer.ggml.eos_token_id", 2)},
          {"pad_token_id", integer_or(f, "tokenizer.ggml.padding_token_id", integer_or(f, "tokenizer.ggml.eos_token_id", 2))},
          {"torch_dtype", "float32"}};
}

}  // namespace

const std::set<std::string>& modelled_gguf_keys() {
  static const std::set<std::string> keys{
      "llama.context_length", "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
      "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.freq_base",
      "llama.attention.layer_norm_rms_epsilon", "llama.rope.dimension_count", "llama.vocab_size",
      "llama.attention.key_length", "llama.attention.value_length"};
  return keys;
}

GgufModel read_llama_gguf(const std::filesystem::path& file) { return read_llama_gguf(read_gguf(file)); }

GgufModel read_llama_gguf(GgufFile file) {
  GgufModel out;
  out.gguf = std::move(file);
  const auto& f = out.gguf;
  const auto& path = f.path;
  check_architecture_keys(f);
  const auto layers = integer(f, "llama.block_count");
  bool tied = true;
  for (const auto& info : f.header.tensors) {
    const auto name = hf_name(info.name, layers);
    if (name.empty())
      gguf_error(path, fmt::format("tensor '{}' is not part of the LLaMA architecture as mapped here "
                                   "(biases, RoPE frequency tables and other extras are refused)",
                                   info.name));
    tied = tied && name != "lm_head.weight";
    out.weights[name] = read_gguf_tensor(f, info);
    out.source_types[name] = ggml_type_traits(info.type).name;
  }
  out.config_json = config_json(f, tied);
  out.config = ModelConfig::from_json(out.config_json, path.string());
  const auto head_dim = out.config.head_dim;
  for (int64_t l = 0; l < layers; ++l) {
    const auto key = [l](const char* proj) { return fmt::format("model.layers.{}.self_attn.{}.weight", l, proj); };
    for (auto [proj, heads] : {std::pair{"q_proj", out.config.num_attention_heads},
                               std::pair{"k_proj", out.config.num_key_value_heads}}) {
      auto it = out.weights.find(key(proj));
      if (it == out.weights.end()) gguf_error(path, fmt::format("tensor '{}' is missing", key(proj)));
      if (it->second.dim() != 2 || it->second.size(0) != heads * head_dim)
        gguf_error(path, fmt::format("tensor '{}' has shape [{}], expected {} rows ({} heads of {})", key(proj),
                                     fmt::join(it->second.sizes(), ", "), heads * head_dim, heads, head_dim));
      it->second = permute_rotary_rows(it->second, heads, head_dim);
    }
  }
  return out;
}

}  // namespace headprune::models::llama
