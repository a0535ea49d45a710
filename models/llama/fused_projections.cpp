#include "models/llama/fused_projections.h"

#include <array>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::models::llama {
namespace {

/// One fused matrix of a layer and the parts it holds, in row order.
struct FusedMatrix {
  std::string fused;               ///< HF name of the fused weight
  std::vector<std::string> parts;  ///< HF names of the split weights
  std::vector<int64_t> rows;       ///< rows of each part
};

/// Layer l's fused matrices, sized by the heads `c` keeps there.
std::array<FusedMatrix, 2> fused_matrices(const ModelConfig& c, int64_t l) {
  const auto prefix = fmt::format("model.layers.{}.", l);
  const auto q_rows = static_cast<int64_t>(c.kept_heads[l].size()) * c.head_dim;
  const auto kv_rows = static_cast<int64_t>(c.kept_kv_heads()[l].size()) * c.head_dim;
  return {FusedMatrix{prefix + "self_attn.qkv_proj.weight",
                      {prefix + "self_attn.q_proj.weight", prefix + "self_attn.k_proj.weight",
                       prefix + "self_attn.v_proj.weight"},
                      {q_rows, kv_rows, kv_rows}},
          FusedMatrix{prefix + "mlp.gate_up_proj.weight",
                      {prefix + "mlp.gate_proj.weight", prefix + "mlp.up_proj.weight"},
                      {c.ffn_width(l), c.ffn_width(l)}}};
}

}  // namespace

TensorMap split_fused_projections(TensorMap weights, const ModelConfig& c, const std::string& source) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    for (const auto& m : fused_matrices(c, l)) {
      const auto it = weights.find(m.fused);
      if (it == weights.end())
        throw Error(fmt::format("{}: tensor '{}' is missing ({} stores it fused)", source, m.fused, c.model_type));
      const auto& t = it->second;
      int64_t total = 0;
      for (auto r : m.rows) total += r;
      if (t.dim() != 2 || t.size(0) != total || t.size(1) != c.hidden_size)
        throw Error(fmt::format("{}: tensor '{}' has shape [{}]; the config's layer {} needs [{}, {}] "
                                "(rows {} in order)",
                                source, m.fused, fmt::join(t.sizes(), ", "), l, total, c.hidden_size,
                                fmt::join(m.rows, " + ")));
      const auto parts = t.split_with_sizes(m.rows, 0);
      for (size_t i = 0; i < parts.size(); ++i) weights[m.parts[i]] = parts[i].contiguous();
      weights.erase(it);
    }
  }
  return weights;
}

TensorMap fuse_projections(TensorMap weights, const ModelConfig& c) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    for (const auto& m : fused_matrices(c, l)) {
      std::vector<torch::Tensor> parts;
      for (const auto& name : m.parts) {
        parts.push_back(weights.at(name));
        weights.erase(name);
      }
      weights[m.fused] = torch::cat(parts, 0).contiguous();
    }
  }
  return weights;
}

}  // namespace headprune::models::llama
