// What removing each head saves, in the units a sparsity target can be given in.
#pragma once

#include <cstdint>

#include "gates/keep_mask.h"
#include "gates/sparsity.h"
#include "models/config.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {

/// Per-head costs for a model, layer-major over the heads present (see gates::SparsityUnit):
///   heads             1 per head; total = heads present
///   attention-params  4·H·d + 3·d per head (Q/K/V rows with biases, O columns);
///                     total = all Q/K/V/O weights and biases
///   flops             8·H·d + 4·seq_len·d per token per head (models/flops.h);
///                     total = the whole forward pass per token at seq_len
///   kv-cache          2·d / (query heads present in its KV group) per head, so a whole group
///                     costs its keys and values; total = the KV cache per token
///                     (models::kv_values_per_token). Decoders only: an encoder is refused
///                     (headprune::Error).
/// Sparsity targets are fractions of the *original* model when the model is unpruned.
gates::SparsityMeasure sparsity_measure(const models::ModelConfig& config, gates::SparsityUnit unit,
                                        int64_t seq_len);

/// The measure of a run's settings: its unit at flops_seq_len, or with unit latency the
/// run's latency table (LatencyTable::measure).
/// @throws headprune::Error for unit latency without a table (with_budget loads it).
gates::SparsityMeasure sparsity_measure(const models::ModelConfig& config, const GateTrainingOptions& options);

/// `constraints` completed for a model: with a group rule and grouped-query attention
/// (num_key_value_heads < num_attention_heads), head_group holds each present query head's
/// original KV head (original index / (num_attention_heads / num_key_value_heads)); without
/// GQA the rule is dropped (every head is its own group).
gates::MaskConstraints constraints_for(const models::ModelConfig& config,
                                       gates::MaskConstraints constraints);

}  // namespace headprune::pruner
