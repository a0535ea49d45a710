// `headprune bench --decode`: generation with a KV cache, dense vs pruned side by side in one
// process — prefill of a context, then new tokens one at a time — with the KV cache each holds
// and the bytes a decoded token reads (the memory-bound limit of decoding).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/attention_model.h"
#include "pruner/measure/bench.h"

namespace headprune::pruner {

/// Grid and stopping rule of the decode benchmark.
struct DecodeBenchOptions {
  std::vector<int64_t> batches{1};
  std::vector<int64_t> contexts{512, 2048};  ///< prompt tokens prefilled before decoding
  int64_t new_tokens = 32;                   ///< tokens decoded one at a time after the prefill
  RepeatRule repeat{1, 3, 10, 0.05, 120};    ///< a rep = one prefill and its new tokens
  uint64_t seed = 1234;                      ///< token ids
  torch::Device device = torch::kCPU;
};

/// One model's side of a cell. Times are medians over the reps, in milliseconds.
struct DecodeSide {
  double prefill_ms = 0;
  double decode_ms_per_token = 0;  ///< one decoding step (batch tokens), the mean over new_tokens
  double decode_p25_ms = 0, decode_p75_ms = 0;
  double decode_tokens_per_s = 0;  ///< batch / decode_ms_per_token
  int64_t kv_cache_bytes = 0;      ///< measured: what the cache's tensors hold after the last step
  /// Bytes one decoding step reads at this context: the weights (models::decode_weight_bytes)
  /// plus the KV cache of every sequence in the batch at context + new_tokens / 2 positions.
  double bytes_read_per_step = 0;
  /// CPU: how far the resident memory rose during one untimed rep (prefill and decoding) above
  /// what was resident before it (the weights and everything else already there): activations,
  /// the KV cache, allocator slack (VmHWM − VmRSS after resetting the peak, process_memory.h).
  /// 0 where not measured (CUDA, or a kernel that cannot reset the peak).
  int64_t peak_working_bytes = 0;
  nlohmann::json to_json() const;
};

/// One (batch, context) cell.
struct DecodeCell {
  int64_t batch = 0, context = 0, new_tokens = 0;
  int reps = 0;
  DecodeSide dense, pruned;
  double prefill_speedup = 0;  ///< dense prefill / pruned prefill
  double decode_speedup = 0;   ///< dense step / pruned step
  double bytes_ratio = 0;      ///< dense bytes_read_per_step / pruned's: the memory-bound speedup
  nlohmann::json to_json() const;
};

/// The whole run, with what it ran on.
struct DecodeReport {
  std::vector<DecodeCell> results;
  BenchPlatform platform;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

/// Bytes of weights one decoding step reads: every parameter's bytes, except that an input
/// embedding table not shared with the LM head is read one row per token (counted as one row).
int64_t decode_weight_bytes(const models::AttentionModel& model);

/// Times `dense` and `pruned` decoding with a KV cache (AttentionModel::forward_cached; random
/// token ids, no padding) at every (batch, context): each rep prefills `context` tokens, then
/// runs new_tokens steps of one token per sequence; the two models alternate
/// (time_alternately, on the decoding step); then one untimed rep each measures its peak working
/// memory (DecodeSide::peak_working_bytes). Progress on stderr.
/// @throws headprune::Error if the grid is empty, a batch or context is < 1, new_tokens < 1,
///         context + new_tokens exceeds either model's max_position_embeddings, or a model has
///         no cached decoder (an encoder).
DecodeReport run_decode_bench(models::AttentionModel& dense, models::AttentionModel& pruned,
                              const DecodeBenchOptions& options);

}  // namespace headprune::pruner
