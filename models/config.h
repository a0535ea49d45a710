// The typed model configuration, parsed once from an HF `config.json`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headprune::models {

/// HF `config.json`, with HF's defaults for absent optional keys.
///
/// Head counts: `num_attention_heads` is the count the architecture was trained with (the
/// *original* heads, indices 0..num_attention_heads-1). HF records removed heads in
/// `pruned_heads` (layer -> removed original indices, applied before weights load, see
/// transformers `PreTrainedModel.prune_heads`), so layer l keeps the original heads not listed
/// there, in ascending order; `kept_heads[l]` holds them.
struct ModelConfig {
  std::string model_type;             ///< "bert" (more architectures register in checkpoint.cpp)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;            ///< model width H
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;    ///< original heads per layer
  int64_t num_key_value_heads = 0;    ///< equals num_attention_heads for BERT
  int64_t head_dim = 0;               ///< explicit `head_dim` or hidden_size / num_attention_heads
  int64_t intermediate_size = 0;
  std::string hidden_act = "gelu";    ///< "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh", "relu"
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  int64_t pad_token_id = 0;
  double layer_norm_eps = 1e-12;
  /// HF `pruned_heads`: layer -> removed original head indices (sorted, unique).
  std::map<int64_t, std::vector<int64_t>> pruned_heads;
  /// Derived: per layer, the original indices of the heads present, ascending.
  std::vector<std::vector<int64_t>> kept_heads;
  /// The whole file as read, so that export keeps keys headprune does not model.
  nlohmann::json raw;

  /// Heads present in each layer (size num_hidden_layers).
  std::vector<int64_t> heads_per_layer() const;
  /// Total heads present over all layers.
  int64_t total_heads() const;

  /// Parses a config object. `source` names the file in error messages.
  /// @throws headprune::Error for an unknown `model_type`, a missing required key (named),
  ///         a wrong-typed value, hidden_size not divisible by num_attention_heads (without an
  ///         explicit head_dim), or `pruned_heads` naming a layer/head out of range.
  static ModelConfig from_json(const nlohmann::json& j, const std::string& source);
  /// Reads and parses `<dir>/config.json`. @throws headprune::Error (file named).
  static ModelConfig from_directory(const std::filesystem::path& dir);

  /// The config to write next to pruned weights: `raw` with `pruned_heads` replaced by the
  /// current one (string layer keys, as HF writes them).
  nlohmann::json to_json() const;

  /// Records that `removed` (original indices) were removed from `layer`; updates
  /// pruned_heads and kept_heads. @throws headprune::Error if an index is not present.
  void remove_heads(int64_t layer, const std::vector<int64_t>& removed);
};

/// Reads a JSON file. @throws headprune::Error naming the file on I/O or parse failure.
nlohmann::json read_json_file(const std::filesystem::path& file);

}  // namespace headprune::models
