// Writing a checkpoint as one ONNX model that ONNX Runtime runs: `export-onnx`, and
// `onnx/model.onnx` inside folders written by `apply --onnx` / `prune --onnx`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// The ONNX opset written (the highest Debian's libonnx 1.12 checks; ONNX Runtime runs it).
inline constexpr int64_t kOnnxOpset = 17;
/// Where `--onnx` puts the model inside an exported folder (the layout sentence-transformers'
/// ONNX backend and Optimum look for).
inline constexpr const char* kOnnxFolderFile = "onnx/model.onnx";

/// Where the weights go: inside the .onnx file unless they exceed what one protobuf message
/// holds (2 GiB), or always beside it as ONNX external data.
enum class OnnxWeights { automatic, external };

/// A serialized, checked ONNX model and what it exposes.
struct OnnxModel {
  std::string bytes;                 ///< ModelProto, serialized
  /// The initializers' bytes when written as ONNX external data (empty otherwise), for the file
  /// external_data_name(model file name) beside the model.
  std::string external_data;
  std::vector<std::string> inputs;   ///< input_ids, attention_mask[, token_type_ids]
  std::vector<std::string> outputs;  ///< last_hidden_state[, logits][, sentence_embedding]
  int64_t weight_bytes = 0;          ///< float32 initializers
};

/// The external-data file of the model file `model_file_name` ("model.onnx" ->
/// "model.onnx_data", torch.onnx's and Optimum's name), in the same folder.
std::string external_data_name(const std::string& model_file_name);

/// Builds `checkpoint`'s forward pass as an ONNX ModelProto (IR of libonnx, opset kOnnxOpset,
/// float32, batch and sequence dimensions dynamic) with Optimum's names: inputs int64
/// `input_ids`, `attention_mask` (and BERT's `token_type_ids`), each [batch_size,
/// sequence_length]; outputs `last_hidden_state` [batch_size, sequence_length, hidden_size];
/// `logits` — [batch_size, sequence_length, vocab_size] for a causal LM, [batch_size,
/// num_labels] for a `*ForSequenceClassification` checkpoint; and, when
/// `sentence_embedding` and the folder is a sentence-transformers model, `sentence_embedding`
/// [batch_size, D] (its Pooling, Dense and Normalize modules). Per-layer head counts (uneven,
/// or zero) are written as they are. The model passes `onnx::checker::check_model`.
///
/// With external data (`weights`, or automatically above 2 GiB) every initializer of 1 KiB or
/// more is stored in `external_data` (onnx.proto TensorProto: data_location EXTERNAL,
/// external_data `location` = external_data_name(model_file_name), `offset`, `length`; tensors
/// of 1 MiB or more start at a multiple of 64 KiB, as onnx.external_data_helper aligns them,
/// so runtimes can map them).
/// @throws headprune::Error when the checker rejects the graph.
OnnxModel build_onnx(const models::Checkpoint& checkpoint, bool sentence_embedding,
                     OnnxWeights weights = OnnxWeights::automatic,
                     const std::string& model_file_name = "model.onnx");

/// build_onnx for a folder export (`--onnx` of apply and prune): {kOnnxFolderFile: model[,
/// "onnx/model.onnx_data": external data]}, relative to the folder, with the
/// sentence_embedding output and automatic weights.
std::map<std::string, std::string> onnx_folder_files(const models::Checkpoint& checkpoint);

/// Checks, before any work, that `file` can receive an export: not a folder, in an existing
/// folder, new unless `force` (its external-data file too). @throws headprune::Error saying what
/// to change.
void check_onnx_target(const std::filesystem::path& file, bool force);

/// Writes build_onnx's model to `file` (and its external data, first, to
/// external_data_name(file) beside it), each atomically (temporary file, then rename), after
/// check_onnx_target. With `force`, a stale external-data file of an earlier export that the new
/// model does not use is removed.
/// @throws headprune::Error if `file` exists and not `force`, is a folder, or its folder is
///         missing; nothing is written then.
OnnxModel export_onnx(const models::Checkpoint& checkpoint, const std::filesystem::path& file,
                      bool force, bool sentence_embedding, OnnxWeights weights = OnnxWeights::automatic);

}  // namespace headprune::pruner
