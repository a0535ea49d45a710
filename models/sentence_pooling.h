// sentence-transformers modules after the Transformer: how a folder turns token states into one
// sentence embedding (Pooling, then any Dense layers, then Normalize).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <torch/types.h>

namespace headprune::models {

class OnnxGraph;

/// A sentence-transformers `Dense` module (sentence_transformers/models/Dense.py):
/// y = activation(x·Wᵀ + b), weights from `<path>/model.safetensors` (`linear.weight`
/// [out_features, in_features], `linear.bias` [out_features] when `bias` is true).
struct SentenceDense {
  std::string path;            ///< the module folder, relative to the checkpoint ("2_Dense")
  torch::Tensor weight;        ///< [out_features, in_features], float32, CPU
  torch::Tensor bias;          ///< [out_features] or undefined
  std::string activation;      ///< "identity", "tanh", "relu", "sigmoid" or "gelu"
  /// x: [B, in_features] -> [B, out_features].
  torch::Tensor forward(const torch::Tensor& x) const;
};

/// The modules of a sentence-transformers folder after its Transformer (`modules.json`;
/// sentence-transformers `models/Pooling.py`, `Dense.py`, `Normalize.py`), in the order
/// sentence-transformers runs them: Pooling, Dense layers, Normalize. Every key of the module
/// configs that changes the result is modelled; anything else is refused by name.
struct SentencePooling {
  enum class Mode { kCls, kMax, kMean, kMeanSqrtLen };
  /// Pooling modes, concatenated in sentence-transformers' order (the `pooling_mode` list's
  /// order in 6.x; cls, max, mean, mean_sqrt_len for the older flags): an embedding of
  /// modes.size() × hidden_size before any Dense layer.
  std::vector<Mode> modes = {Mode::kMean};
  std::vector<SentenceDense> dense;  ///< Dense modules after pooling, in order
  bool normalize = false;           ///< an L2 `Normalize` module ends the pipeline
  bool from_sentence_transformers = false;  ///< false: no modules.json, defaults used
  int64_t max_seq_length = 0;       ///< `sentence_bert_config.json` max_seq_length (0 = unset)

  /// Reads the folder's modules.json and module configs; a folder without modules.json gets
  /// mean pooling without normalisation. `hidden_size` checks the Pooling and Dense widths.
  /// @throws headprune::Error naming the file and key or module: a malformed file, a module
  ///         type other than Transformer/Pooling/Dense/Normalize or out of that order, a
  ///         pooling mode not supported (weighted-mean, last-token), an unknown config key,
  ///         a Dense activation not supported, or Dense weights missing or misshapen.
  static SentencePooling from_directory(const std::filesystem::path& dir, int64_t hidden_size);

  /// hidden: [B, T, H] float32 or bfloat16 (pooled in float32); attention_mask: [B, T] (1 real,
  /// 0 pad) -> [B, D] float32.
  /// Mean: sum(h·m)/max(sum(m), 1e-9); mean_sqrt_len: sum(h·m)/sqrt(max(sum(m), 1e-9)); CLS:
  /// token 0; max: padded positions set to -1e9 first; modes concatenated; then each Dense;
  /// then L2 normalisation (eps 1e-12) if `normalize`.
  torch::Tensor embed(const torch::Tensor& hidden, const torch::Tensor& attention_mask) const;

  /// embed() as ONNX (models/sentence_pooling_onnx.cpp): `hidden` names a float [B, T, H] value
  /// of `graph`, `attention_mask` an int64 [B, T] one; returns the embedding's value name [B, D].
  std::string add_to_onnx(OnnxGraph& graph, const std::string& hidden,
                          const std::string& attention_mask) const;

  /// Width of the embedding embed() returns for a model of width `hidden_size`.
  int64_t embedding_size(int64_t hidden_size) const;

  /// e.g. "mean", "cls+max", "mean+dense(384->4,tanh)+normalize".
  std::string describe() const;
};

}  // namespace headprune::models
