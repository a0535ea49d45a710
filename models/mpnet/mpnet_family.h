// The MPNet family (HF `model_type` "mpnet": MPNetModel, sentence-transformers' all-mpnet-base-v2):
// BERT's computation without token types, with RoBERTa-style positions (counted after
// padding_idx 1) and a relative position bias per head shared by all layers (Song et al. 2020,
// "MPNet"). The model is BertModel (models/bert/bert_model.h) with MPNet's tensor names mapped on
// load and export (mpnet_model.cpp).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "models/model_family.h"

namespace headprune::models::mpnet {

/// The family's config rules, costs and export notes (mpnet_family.cpp).
const ModelFamily& family();

/// An MPNetModel for `config` (random weights): BertModel computing HF's `modeling_mpnet.py`,
/// reading and writing `encoder.layer.N.attention.attn.{q,k,v,o}`, `attention.LayerNorm` and
/// `encoder.relative_attention_bias`; with the pooler when `weight_names` has
/// `pooler.dense.weight`. Defined in mpnet_model.cpp.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names);

}  // namespace headprune::models::mpnet
