// Encoder families that compute as BERT but name their layer tensors their own way (DistilBERT's
// q_lin, MPNet's attn.q): the map between their file names and BertModel's.
#pragma once

#include <string>
#include <vector>

#include "models/attention_model.h"

namespace headprune::models::bert {

/// One module of an encoder layer under two names, each ending in '.': the family's in its
/// checkpoint, and BertModel's ("attention.self.query.", ...).
struct LayerModuleName {
  const char* file;
  const char* bert;
};

/// `weights` with every layer tensor renamed: `file_prefix N.<file module>rest` to
/// `encoder.layer.N.<bert module>rest` when `to_bert`, and back otherwise. Tensors outside the
/// layers keep their names. @throws headprune::Error naming `source`, the tensor and `family`
/// for a layer tensor of no module in `modules` (it would be carried along unused).
TensorMap rename_layer_tensors(TensorMap weights, const std::string& file_prefix,
                               const std::vector<LayerModuleName>& modules, bool to_bert,
                               const std::string& family, const std::string& source);

}  // namespace headprune::models::bert
