// Families that compute as a shared model but name their layer tensors their own way (DistilBERT's
// q_lin and MPNet's attn.q beside BertModel's, ModernBERT's attn.Wqkv beside LlamaModel's): the
// map between their file names and the model's.
#pragma once

#include <string>
#include <vector>

#include "models/attention_model.h"

namespace headprune::models {

/// One module of a layer (or, outside the layers, a whole tensor-name prefix) under two names,
/// each ending in '.': the family's in its checkpoint, and the model's ("attention.self.query.", ...).
struct LayerModuleName {
  const char* file;
  const char* model;
};

/// `weights` with every layer tensor renamed: `file_prefix N.<file module>rest` to
/// `model_prefix N.<model module>rest` (e.g. "encoder.layer.") when `to_model`, and back
/// otherwise. Tensors outside the layers keep their names. @throws headprune::Error naming
/// `source`, the tensor and `family` for a layer tensor of no module in `modules` (it would be
/// carried along unused).
TensorMap rename_layer_tensors(TensorMap weights, const std::string& file_prefix, const std::string& model_prefix,
                               const std::vector<LayerModuleName>& modules, bool to_model,
                               const std::string& family, const std::string& source);

/// `weights` with each tensor whose name starts with one of `prefixes`' file names (to_model) or
/// model names (!to_model) renamed to the other; the rest unchanged.
TensorMap rename_prefixes(TensorMap weights, const std::vector<LayerModuleName>& prefixes, bool to_model);

}  // namespace headprune::models
