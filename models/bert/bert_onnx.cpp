// HF BertModel as an ONNX graph: the same
// computation as bert_model.cpp's forward, per layer with that layer's heads.
#include <fmt/format.h>
#include <torch/torch.h>

#include "models/bert/bert_model.h"
#include "models/errors.h"
#include "models/formats/onnx_graph.h"
#include "models/relative_position.h"

namespace headprune::models {
namespace {

/// Position ids [B, T]: 0..T-1, or RoBERTa's (HF create_position_ids_from_input_ids) when
/// `padding_idx` >= 0: padding_idx + the running count of non-padding tokens, padding_idx at
/// padding.
std::string position_ids(OnnxGraph& g, int64_t padding_idx) {
  if (padding_idx < 0) return g.range(g.sequence_length("input_ids"));
  const auto pad = g.int64_constant({padding_idx}, true);
  auto real = g.to_int64(g.op("Not", {g.op("Equal", {"input_ids", pad})}));
  auto count = g.op("CumSum", {real, g.int64_constant({1}, true)});
  return g.op("Add", {g.op("Mul", {count, real}), pad});
}

/// Word + position (+ token-type) embeddings, then LayerNorm: [B, T, H].
std::string embeddings_to_onnx(OnnxGraph& g, const BertEmbeddingsImpl& e, const ModelConfig& c) {
  auto sum = g.op("Gather", {g.weight("embeddings.word_embeddings.weight", e.word_embeddings->weight), "input_ids"});
  if (e.token_type_embeddings)
    sum = g.op("Add", {sum, g.op("Gather", {g.weight("embeddings.token_type_embeddings.weight",
                                                     e.token_type_embeddings->weight),
                                            "token_type_ids"})});
  auto position = g.op("Gather", {g.weight("embeddings.position_embeddings.weight", e.position_embeddings->weight),
                                  position_ids(g, c.position_padding_idx)});
  sum = g.op("Add", {sum, position});
  return g.layer_norm(sum, "embeddings.LayerNorm", e.LayerNorm->weight, e.LayerNorm->bias, c.layer_norm_eps);
}

/// MPNet's relative position bias of every original head, [1, heads, T, T]: the bucket of each
/// distance key - query is looked up in a table computed here by relative_position_bucket
/// (float32 as transformers, for every distance the position table allows: no float log in the
/// graph, whose rounding could move a boundary), then the bias table row of that bucket.
std::string relative_bias_to_onnx(OnnxGraph& g, const torch::Tensor& table, const ModelConfig& c) {
  const int64_t span = c.max_position_embeddings;
  const auto buckets = relative_position_bucket(span, kMpnetBuckets, kMpnetMaxDistance, torch::kCPU);
  const auto at = buckets.accessor<int64_t, 2>();
  std::vector<int64_t> by_distance(static_cast<std::size_t>(2 * span - 1));
  for (int64_t d = 1 - span; d < span; ++d)  // d = key - query: row 0 holds d >= 0, column 0 d <= 0
    by_distance[static_cast<std::size_t>(d + span - 1)] = d >= 0 ? at[0][d] : at[-d][0];
  const auto positions = g.range(g.sequence_length("input_ids"));
  const auto distance = g.op("Sub", {g.op("Unsqueeze", {positions, g.int64_constant({0})}),
                                     g.op("Unsqueeze", {positions, g.int64_constant({1})})});
  const auto bucket = g.op("Gather", {g.int64_constant(by_distance), g.op("Add", {distance, g.int64_constant({span - 1}, true)})});
  const auto bias = g.op("Gather", {g.weight("encoder.relative_attention_bias.weight", table), bucket});  // [T, T, H]
  return g.op("Unsqueeze", {g.op("Transpose", {bias}, {{"perm", std::vector<int64_t>{2, 0, 1}}}), g.int64_constant({0})});
}

/// HF's extended attention mask: (1 - mask) · lowest float, [B, 1, 1, T]; in the order
/// torch.onnx writes it (Unsqueeze, Unsqueeze, Cast, Sub, Mul), which ONNX Runtime's
/// transformer optimizer recognises when it fuses attention.
std::string padding_bias(OnnxGraph& g) {
  auto mask = g.op("Unsqueeze", {g.op("Unsqueeze", {"attention_mask", g.int64_constant({1})}), g.int64_constant({2})});
  return g.mask_bias(g.to_float(mask));
}

/// One encoder layer: self-attention over the layer's heads, output projection, residual
/// LayerNorm, then the feed-forward block.
std::string layer_to_onnx(OnnxGraph& g, const BertLayerImpl& layer, const std::string& prefix, const std::string& x,
                          const std::string& mask_bias, const ModelConfig& c) {
  const auto& self = *layer.attention->self;
  const auto& out = *layer.attention->output;
  std::string projected;
  if (self.num_heads == 0) {
    projected = g.op("Add", {x, g.weight(prefix + "attention.output.dense.bias", out.dense->bias)});
  } else {
    const auto at = prefix + "attention.self.";
    auto q = g.split_heads(g.linear(x, at + "query", self.query->weight, self.query->bias), self.num_heads, self.head_dim);
    auto k = g.split_heads(g.linear(x, at + "key", self.key->weight, self.key->bias), self.num_heads, self.head_dim, true);
    auto v = g.split_heads(g.linear(x, at + "value", self.value->weight, self.value->bias), self.num_heads, self.head_dim);
    auto context = g.merge_heads(g.attention(q, k, v, mask_bias, self.head_dim), self.num_heads, self.head_dim);
    projected = g.op("Add", {g.linear(context, prefix + "attention.output.dense", out.dense->weight, out.dense->bias), x});
  }
  auto a = g.layer_norm(projected, prefix + "attention.output.LayerNorm", out.LayerNorm->weight, out.LayerNorm->bias,
                        c.layer_norm_eps);
  const auto& inter = *layer.intermediate->dense;
  const auto& ffn = *layer.output;
  std::string y;
  if (inter.weight.size(0) == 0) {  // no FFN neuron left: the block adds its output bias alone
    y = g.op("Add", {a, g.weight(prefix + "output.dense.bias", ffn.dense->bias)});
  } else {
    auto h = g.activation(g.linear(a, prefix + "intermediate.dense", inter.weight, inter.bias), c.hidden_act);
    y = g.op("Add", {g.linear(h, prefix + "output.dense", ffn.dense->weight, ffn.dense->bias), a});
  }
  return g.layer_norm(y, prefix + "output.LayerNorm", ffn.LayerNorm->weight, ffn.LayerNorm->bias, c.layer_norm_eps);
}

}  // namespace

OnnxModelOutputs BertModel::add_to_onnx(OnnxGraph& g) const {
  for (const char* name : {"input_ids", "attention_mask"}) g.int64_input(name, {"batch_size", "sequence_length"});
  if (embeddings->token_type_embeddings) g.int64_input("token_type_ids", {"batch_size", "sequence_length"});
  auto x = embeddings_to_onnx(g, *embeddings, config_);
  const auto mask_bias = padding_bias(g);
  const auto position_bias =
      relative_attention_bias ? relative_bias_to_onnx(g, relative_attention_bias->weight, config_) : std::string();
  for (size_t l = 0; l < layers.size(); ++l) {
    auto bias = mask_bias;
    if (!position_bias.empty() && layers[l]->attention->self->num_heads > 0)  // the layer's heads' bias
      bias = g.op("Add", {g.op("Gather", {position_bias, g.int64_constant(config_.kept_heads.at(l))}, {{"axis", int64_t{1}}}),
                          mask_bias});
    x = layer_to_onnx(g, *layers[l], "encoder.layer." + std::to_string(l) + ".", x, bias, config_);
  }
  return {x, ""};
}

}  // namespace headprune::models
