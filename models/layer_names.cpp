#include "models/layer_names.h"

#include <utility>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
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

TensorMap rename_layer_tensors(TensorMap weights, const std::string& file_prefix, const std::string& model_prefix,
                               const std::vector<LayerModuleName>& modules, bool to_model,
                               const std::string& family, const std::string& source) {
  const auto& from = to_model ? file_prefix : model_prefix;
  const auto& to = to_model ? model_prefix : file_prefix;
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
      const std::string have = to_model ? m.file : m.model, want = to_model ? m.model : m.file;
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

TensorMap rename_prefixes(TensorMap weights, const std::vector<LayerModuleName>& prefixes, bool to_model) {
  TensorMap out;
  for (auto& [key, tensor] : weights) {
    auto name = key;
    for (const auto& p : prefixes) {
      const std::string have = to_model ? p.file : p.model, want = to_model ? p.model : p.file;
      if (key.rfind(have, 0) != 0) continue;
      name = want + key.substr(have.size());
      break;
    }
    out[name] = std::move(tensor);
  }
  return out;
}

}  // namespace headprune::models
