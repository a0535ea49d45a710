// Token-by-token sampling from a causal language model (a smoke check, not a serving loop:
// every step reruns the whole sequence, no KV cache).
#pragma once

#include <cstdint>
#include <vector>

#include "models/attention_model.h"

namespace headprune::models {

/// Settings of generate_tokens().
struct GenerationOptions {
  int64_t steps = 256;        ///< new tokens to generate at most
  double temperature = 1.0;   ///< 0 = greedy (argmax); else sample softmax(logits / T)
  std::vector<int64_t> stop_tokens;  ///< generation ends when one of these is produced (not kept)
  /// Run each new token alone against a KV cache (AttentionModel::forward_cached) instead of
  /// the whole sequence again; the same tokens either way (tests/llama_test.cpp).
  bool use_cache = true;
};

/// Extends `prompt` (ids, [BOS, ...]) by up to options.steps tokens, stopping early at a stop
/// token or at config().max_position_embeddings tokens. Sampling uses torch's global generator
/// (seed it with torch::manual_seed). @returns prompt + generated ids.
/// @throws headprune::Error if the model has no LM head (logits undefined), the prompt is empty
///         or longer than max_position_embeddings, or temperature < 0.
std::vector<int64_t> generate_tokens(AttentionModel& model, const std::vector<int64_t>& prompt,
                                     const GenerationOptions& options);

}  // namespace headprune::models
