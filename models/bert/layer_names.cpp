#include "models/bert/layer_names.h"

#include <utility>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models::bert {
namespace {

/// "file module" names of `modules`, for the error message.
std::string module_list(const std::vector<LayerModuleName>& modules) {
  std::string out;
  for (const auto& m : modules) {
    std::string name = m.file;
    out += (out.empty() ? "" : ", ") + name.substr(0, name.size() - 1);
  }
  return out;
}

}  // namespace

TensorMap rename_layer_tensors(TensorMap weights, const std::string& file_prefix,
                               const std::vector<LayerModuleName>& modules, bool to_bert,
                               const std::string& family, const std::string& source) {
  const std::string bert_prefix = "encoder.layer.";
  const auto& from = to_bert ? file_prefix : bert_prefix;
  const auto& to = to_bert ? bert_prefix : file_prefix;
  TensorMap out;
  for (auto& [key, tensor] : weights) {
    const auto dot = key.rfind(from, 0) == 0 ? key.find('.', from.size()) : std::string::npos;
    if (dot == std::string::npos) {
      out[key] = std::move(tensor);
      continue;
    }
    const auto index = key.substr(from.size(), dot - from.size() + 1);  // "N."
    const auto rest = key.substr(dot + 1);
    bool renamed = false;
    for (const auto& m : modules) {
      const std::string have = to_bert ? m.file : m.bert, want = to_bert ? m.bert : m.file;
      if (rest.rfind(have, 0) != 0) continue;
      out[to + index + want + rest.substr(have.size())] = std::move(tensor);
      renamed = true;
      break;
    }
    if (!renamed)
      throw Error(fmt::format("{}: tensor '{}' is not part of a {} layer ({})", source, key, family,
                              module_list(modules)));
  }
  return out;
}

}  // namespace headprune::models::bert
