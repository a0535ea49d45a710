// `headprune inspect`: what a checkpoint holds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// Architecture summary of a loaded checkpoint.
struct ModelSummary {
  std::string model_type;
  std::string architecture;  ///< ModelFamily::description
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;  ///< heads per layer this config numbers (config.json)
  int64_t original_num_attention_heads = 0;  ///< heads per layer of the model first pruned
  int64_t head_dim = 0;
  int64_t hidden_size = 0;
  std::vector<int64_t> heads_per_layer;
  std::vector<int64_t> intermediate_sizes;  ///< FFN neurons present per layer
  int64_t intermediate_size = 0;            ///< the FFN width the architecture was built with
  std::vector<int64_t> num_key_value_heads_per_layer;
  std::vector<std::vector<int64_t>> kept_heads;  ///< original indices per layer
  /// Decoders: what one cached position costs each layer's KV cache for one sequence, in numbers
  /// (models::kv_values_per_token_per_layer; × 2 bytes at F16, × 4 at F32). Empty for encoders.
  std::vector<int64_t> kv_cache_values_per_token_per_layer;
  int64_t parameters = 0;            ///< all parameters
  int64_t attention_parameters = 0;  ///< Q, K, V, O weights and biases
  int64_t ffn_parameters = 0;        ///< FFN weights and biases (models::ffn_parameters)
  int64_t seq_len = 0;               ///< sequence length the FLOPs are for
  double flops_per_token = 0;        ///< forward FLOPs per token at seq_len
  double attention_flops_per_token = 0;
  double ffn_flops_per_token = 0;    ///< models::ffn_flops_per_token
  std::uintmax_t weights_file_bytes = 0;  ///< size of the safetensors file(s)
  std::string pooling;               ///< sentence-transformers pooling, or "" if none
  int64_t max_seq_length = 0;
};

/// Computes the summary. `seq_len` >= 1. @throws headprune::Error on a bad seq_len.
ModelSummary summarize(const models::Checkpoint& checkpoint, int64_t seq_len);
/// The same for a model alone: no weights file, pooling or max_seq_length (left 0 / empty).
ModelSummary summarize(const models::AttentionModel& model, int64_t seq_len);

/// One line: heads, FFN neurons, parameters and FLOPs per token with their attention / FFN
/// shares (the rest: embeddings, norms, pooler, LM head).
std::string composition(const ModelSummary& s);

/// Machine-readable form (keys as the struct's fields).
nlohmann::json to_json(const ModelSummary& s);
/// Human-readable multi-line text, no colour.
std::string to_text(const ModelSummary& s);

}  // namespace headprune::pruner
