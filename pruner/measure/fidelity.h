// How closely one model follows another on the same text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/attention_model.h"
#include "models/sentence_pooling.h"

namespace headprune::pruner {

/// Agreement of a student with its teacher over a set of sequences.
struct Fidelity {
  std::size_t sequences = 0;
  double mean_cosine = 0;   ///< mean cosine of sentence embeddings
  double p5_cosine = 0;     ///< 5th percentile (the worst 5% of sentences are below it)
  double min_cosine = 0;
  double hidden_mse = 0;    ///< mean squared error of final hidden states over real tokens
  /// Models with an LM head only (else has_lm false and these 0):
  bool has_lm = false;
  double kl = 0;                   ///< mean KL(teacher ‖ student) per real token, nats
  double teacher_perplexity = 0;   ///< exp(mean NLL of each next real token), teacher
  double student_perplexity = 0;   ///< the same for the student
  nlohmann::json to_json() const;
  /// One line for logs: cosines and MSE, plus KL and perplexities for LMs.
  std::string describe() const;
};

/// Runs both models over `sequences` (token ids with special tokens) in length-bucketed batches
/// of `batch_size` and compares them. `student_multipliers` may be empty ({}). No gradients.
/// Language models: the forward passes give hidden states only and the LM heads
/// (lm_head_weight) run `chunk_tokens` real tokens at a time (0 = automatic_kl_chunk_tokens:
/// whole batches up to 1 GiB of float32 logits, else ~64 MiB chunks), so no batch's whole
/// logits of both models and their log-softmaxes exist at once.
/// @throws headprune::Error if `sequences` is empty or the hidden sizes differ.
Fidelity measure_fidelity(models::AttentionModel& student,
                          const models::Multipliers& student_multipliers,
                          models::AttentionModel& teacher,
                          const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id,
                          const models::SentencePooling& pooling, std::size_t batch_size,
                          const torch::Device& device, int64_t chunk_tokens = 0);

}  // namespace headprune::pruner
