#include "models/config_keys.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/remote_code.h"

namespace headprune::models {
namespace {

/// Keys ModelConfig::from_json reads for every family (each family adds its own:
/// ModelFamily::modelled_keys).
const std::set<std::string> kModelledCommon = {
    "model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "max_position_embeddings", "pad_token_id", "head_dim",
    "pruned_heads", "headprune", "id2label", "label2id"};

/// Keys that do not change a forward pass in eval mode: provenance, training-only settings
/// (dropout, initialisation, checkpointing), output switches, and HF generate() defaults
/// (headprune's generation takes its settings from the command line).
const std::set<std::string> kInert = {
    "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype",
    "initializer_range", "gradient_checkpointing", "use_cache", "attention_probs_dropout_prob",
    "hidden_dropout_prob", "classifier_dropout", "attention_dropout", "resid_pdrop", "embd_pdrop",
    "output_attentions",
    "output_hidden_states", "return_dict", "torchscript", "use_bfloat16", "tie_encoder_decoder",
    "chunk_size_feed_forward", "finetuning_task", "tokenizer_class", "prefix", "sep_token_id",
    "decoder_start_token_id", "task_specific_params", "max_length", "min_length", "do_sample",
    "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty", "temperature", "top_k",
    "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens",
    "begin_suppress_tokens", "cross_attention_hidden_size", "tf_legacy_loss", "output_past",
    "problem_type", "num_labels", "tie_word_embeddings", "bos_token_id", "eos_token_id"};

/// Keys allowed with exactly one value (the one headprune implements); null counts as the
/// default where HF treats it so.
const std::map<std::string, nlohmann::json> kRequiredValue = {
    {"position_embedding_type", "absolute"}, {"is_decoder", false}, {"add_cross_attention", false},
    {"is_encoder_decoder", false}, {"pretraining_tp", 1}, {"use_sliding_window", false},
    {"sliding_window", nullptr}};

/// Whether `auto_map` registers only classes of `ours` (the family's remote code), each as
/// `ours` does: headprune's own export, or one an earlier headprune wrote before the file
/// registered more classes (e.g. AutoModelForSequenceClassification).
bool own_auto_map(const nlohmann::json& auto_map, const RemoteCode* ours) {
  if (!ours || !auto_map.is_object() || auto_map.empty()) return false;
  for (const auto& [auto_class, target] : auto_map.items())
    if (!ours->auto_map.contains(auto_class) || ours->auto_map.at(auto_class) != target) return false;
  return true;
}

}  // namespace

void check_config_keys(const nlohmann::json& config, const ModelFamily& family,
                       const std::string& source) {
  const auto& modelled = family.modelled_keys();
  for (const auto& [key, value] : config.items()) {
    if (kModelledCommon.count(key) || modelled.count(key) || kInert.count(key)) continue;
    if (key == "auto_map") {
      // headprune's own export (the family's remote code) computes what the family does.
      if (own_auto_map(value, family.remote_code())) continue;
      throw Error(fmt::format("{}: 'auto_map' {} names custom modelling code that headprune does "
                              "not run; only checkpoints of the built-in '{}' class are supported",
                              source, value.dump(), family.model_type()));
    }
    if (auto required = kRequiredValue.find(key); required != kRequiredValue.end()) {
      if (value == required->second || value.is_null()) continue;
      throw Error(fmt::format("{}: '{}' is {}, but headprune implements only {}", source, key,
                              value.dump(), required->second.dump()));
    }
    throw Error(fmt::format("{}: key '{}' is not modelled by headprune for model_type '{}'; if "
                            "it does not change the computation, remove it from config.json",
                            source, key, family.model_type()));
  }
  const auto problem = config.value("problem_type", nlohmann::json());
  if (!problem.is_null() && problem != "single_label_classification")
    throw Error(fmt::format("{}: problem_type {} is not supported (single_label_classification)",
                            source, problem.dump()));
}

}  // namespace headprune::models
