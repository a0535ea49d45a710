// The RoBERTa family (HF `model_type` "roberta": RobertaModel, sentence-transformers encoders
// such as all-distilroberta-v1) and XLM-RoBERTa ("xlm-roberta": XLMRobertaModel, a copy of
// RobertaModel under another name; multilingual-e5, paraphrase-multilingual-*, bge-m3). Both
// compute BERT's encoder with positions counted after padding_idx (HF
// create_position_ids_from_input_ids); the model is BertModel (models/bert/bert_model.h) with
// ModelConfig::position_padding_idx = pad_token_id (the registry builds it with bert::make_model).
// This folder holds only what differs from BERT.
#pragma once

#include "models/model_family.h"

namespace headprune::models::roberta {

/// RoBERTa's config rules, costs and export notes (roberta_family.cpp).
const ModelFamily& family();
/// XLM-RoBERTa's: RoBERTa's rules under model_type "xlm-roberta" (HF XLMRobertaConfig).
const ModelFamily& xlm_family();

}  // namespace headprune::models::roberta
