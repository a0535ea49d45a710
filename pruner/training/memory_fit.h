// Whether gate training can fit in this machine's memory, estimated before anything loads
// (issue 37: a model that cannot fit is refused with both numbers and the flags that would help).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "pruner/training/training_options.h"

namespace headprune::pruner {

/// A lower bound of the resident memory gate training needs, bytes, from a checkpoint folder's
/// config.json and safetensors headers alone.
struct MemoryNeed {
  /// The weights as they will be held: each floating-point matrix in the file's dtype under
  /// WeightStorage::source (float32 under --float32-weights), vectors in float32. With
  /// --train-weights, the frozen teacher's copy so held plus the student's float32 copy.
  int64_t weights = 0;
  /// --train-weights: the float32 gradients and AdamW's two moments, 12 bytes per parameter.
  int64_t weight_training = 0;
  /// What backward must keep at the least, float32, for batch_tokens tokens: per token and layer
  /// the residual stream (hidden_size) and the FFN's activation input (intermediate_size); with
  /// checkpointed layers (--checkpoint-layers) each layer's input and one layer's both.
  int64_t activations = 0;
  int64_t batch_tokens = 0;  ///< --batch-size × --max-length
  int64_t total() const { return weights + weight_training + activations; }
};

/// The need of gate training `model` with options `o` at `batch_tokens` tokens per step; none
/// for a single-file checkpoint (GGUF, llama2.c), whose size is not read before loading.
/// @throws headprune::Error for an unreadable config.json or safetensors header.
std::optional<MemoryNeed> gate_training_memory_need(const std::filesystem::path& model, const GateTrainingOptions& o,
                                                    int64_t batch_tokens);

/// Memory this process can take without pushing others out: MemAvailable + SwapFree of
/// /proc/meminfo, bytes; none where that file is not there (not Linux).
std::optional<int64_t> available_memory();

/// "" when `need` fits in `available` bytes, else one message with both numbers and the flags
/// that lower the need (--batch-size, --max-length; --train-weights and --float32-weights when given).
std::string cannot_fit_reason(const MemoryNeed& need, int64_t available, const GateTrainingOptions& o);

/// Refuses, before loading, gate training whose lower-bound need exceeds available_memory().
/// @throws headprune::Error with cannot_fit_reason's message.
void refuse_if_it_cannot_fit(const std::filesystem::path& model, const GateTrainingOptions& o, int64_t batch_tokens);

}  // namespace headprune::pruner
