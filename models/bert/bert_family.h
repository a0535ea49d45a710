// The BERT family (HF `model_type` "bert": BertModel, BertFor*, sentence-transformers encoders).
#pragma once

#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "models/model_family.h"

namespace headprune::models::bert {

/// The family's config rules, costs and export notes (bert_family.cpp).
const ModelFamily& family();

/// What the BERT-style encoder families share (BERT, DistilBERT, MPNet): every head has its own
/// Q/K/V, all projections carry biases, two FFN matrices, no language-model head, and removed
/// heads are recorded in config.json's `pruned_heads` (string layer keys, as HF writes; layers
/// with none left out), as HF's BertConfig / DistilBertConfig / MPNetConfig do.
class EncoderFamily : public ModelFamily {
 public:
  /// `c.raw` with `pruned_heads` replaced by the current one.
  nlohmann::json to_json(const ModelConfig& c) const override;
  bool has_qkv_bias(const ModelConfig&) const override { return true; }
  bool has_output_bias(const ModelConfig&) const override { return true; }
  bool has_ffn_bias(const ModelConfig&) const override { return true; }
  int64_t ffn_matrices() const override { return 2; }
  bool has_lm_head() const override { return false; }
  /// WordPiece (tokenizer.json, or vocab.txt alone).
  std::vector<std::string> tokenizer_models(const ModelConfig&) const override { return {"WordPiece"}; }
};

/// A BertModel for `config` (random weights); with the pooler when `weight_names` has
/// `pooler.dense.weight` (load_checkpoint takes a BertFor* file's "bert." off first). Also
/// RoBERTa's and XLM-R's (the same tensor names). Defined in bert_model.cpp.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names);

}  // namespace headprune::models::bert
