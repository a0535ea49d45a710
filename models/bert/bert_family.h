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

/// config.json for an export: `c.raw` with `pruned_heads` replaced by the current one (string
/// layer keys, as HF writes; layers with none left out). HF's BERT-family configs record
/// removed heads so (BertConfig, DistilBertConfig).
nlohmann::json with_pruned_heads(const ModelConfig& c);

/// A BertModel for `config` (random weights); with the pooler when `weight_names` has
/// `pooler.dense.weight` (or `bert.pooler.dense.weight`). Defined in bert_model.cpp.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config,
                                           const std::set<std::string>& weight_names);

}  // namespace headprune::models::bert
