// The DistilBERT family (HF `model_type` "distilbert": DistilBertModel, sentence-transformers
// encoders such as multi-qa-distilbert): BERT's computation without token types, under its own
// tensor and config names. The model is BertModel (models/bert/bert_model.h) with DistilBERT's
// tensor names mapped on load and export (distilbert_model.cpp); this folder holds only what
// differs from BERT.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "models/model_family.h"

namespace headprune::models::distilbert {

/// The family's config rules, costs and export notes (distilbert_family.cpp).
const ModelFamily& family();

/// A DistilBertModel for `config` (random weights): BertModel computing HF's
/// `modeling_distilbert.py` (word + position embeddings, LayerNorm eps 1e-12, post-LN layers),
/// reading and writing `transformer.layer.N.attention.{q,k,v,out}_lin`, `sa_layer_norm`,
/// `ffn.lin1/lin2`, `output_layer_norm`. Defined in distilbert_model.cpp.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names);

}  // namespace headprune::models::distilbert
