// The ModernBERT family (HF `model_type` "modernbert": ModernBertModel, sentence-transformers
// encoders on ModernBERT): a pre-norm encoder with rotary positions — global layers (RoPE base
// global_rope_theta) between local ones that attend within local_attention / 2 positions either
// side (base local_rope_theta) —, fused `Wqkv` and GeGLU `Wi`, LayerNorms without biases, a norm
// after the embeddings and none before layer 0's attention, and no LM head. The model is LlamaModel
// (models/llama/llama_model.h, which holds these as ModelConfig options) reading and writing
// ModernBERT's tensor names (modernbert_model.cpp); this folder holds only what differs.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "models/model_family.h"

namespace headprune::models::modernbert {

/// The family's config rules, costs and export notes (modernbert_family.cpp).
const ModelFamily& family();

/// A ModernBertModel for `config` (random weights): LlamaModel with ModernBERT's options, reading
/// and writing `embeddings.{tok_embeddings,norm}`, `layers.N.{attn_norm,attn.Wqkv,attn.Wo,mlp_norm,
/// mlp.Wi,mlp.Wo}` and `final_norm` (Wqkv split into q/k/v rows, Wi into its activated and gating
/// halves on load, fused back on export). Defined in modernbert_model.cpp.
std::shared_ptr<AttentionModel> make_model(const ModelConfig& config, const std::set<std::string>& weight_names);

}  // namespace headprune::models::modernbert
