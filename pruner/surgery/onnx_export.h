// Writing a checkpoint as one ONNX model that ONNX Runtime runs: `export-onnx`, and
// `onnx/model.onnx` inside folders written by `apply --onnx` / `prune --onnx`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// The ONNX opset written (the highest Debian's libonnx 1.12 checks; ONNX Runtime runs it).
inline constexpr int64_t kOnnxOpset = 17;
/// Where `--onnx` puts the model inside an exported folder (the layout sentence-transformers'
/// ONNX backend and Optimum look for).
inline constexpr const char* kOnnxFolderFile = "onnx/model.onnx";

/// A serialized, checked ONNX model and what it exposes.
struct OnnxModel {
  std::string bytes;                 ///< ModelProto, serialized
  std::vector<std::string> inputs;   ///< input_ids, attention_mask[, token_type_ids]
  std::vector<std::string> outputs;  ///< last_hidden_state[, logits][, sentence_embedding]
  int64_t weight_bytes = 0;          ///< float32 initializers
};

/// Builds `checkpoint`'s forward pass as an ONNX ModelProto (IR of libonnx, opset kOnnxOpset,
/// float32, batch and sequence dimensions dynamic) with Optimum's names: inputs int64
/// `input_ids`, `attention_mask` (and BERT's `token_type_ids`), each [batch_size,
/// sequence_length]; outputs `last_hidden_state` [batch_size, sequence_length, hidden_size];
/// `logits` — [batch_size, sequence_length, vocab_size] for a causal LM, [batch_size,
/// num_labels] for a BertForSequenceClassification checkpoint; and, when
/// `sentence_embedding` and the folder is a sentence-transformers model, `sentence_embedding`
/// [batch_size, D] (its Pooling, Dense and Normalize modules). Per-layer head counts (uneven,
/// or zero) are written as they are. The model passes `onnx::checker::check_model`.
/// @throws headprune::Error when the weights exceed what one protobuf file holds (2 GiB; ONNX
///         external data is not written), or the checker rejects the graph.
OnnxModel build_onnx(const models::Checkpoint& checkpoint, bool sentence_embedding);

/// Checks, before any work, that `file` can receive an export: not a folder, in an existing
/// folder, new unless `force`. @throws headprune::Error saying what to change.
void check_onnx_target(const std::filesystem::path& file, bool force);

/// Writes build_onnx's model to `file` atomically (temporary file, then rename), after
/// check_onnx_target.
/// @throws headprune::Error if `file` exists and not `force`, is a folder, or its folder is
///         missing; nothing is written then.
OnnxModel export_onnx(const models::Checkpoint& checkpoint, const std::filesystem::path& file,
                      bool force, bool sentence_embedding);

}  // namespace headprune::pruner
