// sentence-transformers' Pooling, Dense and Normalize modules as ONNX: SentencePooling::embed
// in the graph, so a plain ONNX Runtime user gets the sentence embedding the folder defines.
#include <fmt/format.h>
#include <torch/torch.h>

#include "models/formats/onnx_graph.h"
#include "models/sentence_pooling.h"

namespace headprune::models {

std::string SentencePooling::add_to_onnx(OnnxGraph& g, const std::string& hidden,
                                         const std::string& attention_mask) const {
  auto m = g.op("Unsqueeze", {g.to_float(attention_mask), g.int64_constant({2})});
  const auto axis1 = g.int64_constant({1});
  std::vector<std::string> parts;
  for (auto mode : modes) {
    if (mode == Mode::kCls) {
      parts.push_back(g.op("Gather", {hidden, g.int64_constant({0}, true)}, {{"axis", int64_t{1}}}));
    } else if (mode == Mode::kMax) {
      auto padded = g.op("Equal", {m, g.float_constant(0.0F)});
      auto filled = g.op("Where", {padded, g.float_constant(-1e9F), hidden});
      parts.push_back(g.op("ReduceMax", {filled}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}));
    } else {
      auto counts = g.op("Max", {g.op("ReduceSum", {m, axis1}, {{"keepdims", int64_t{0}}}), g.float_constant(1e-9F)});
      auto sum = g.op("ReduceSum", {g.op("Mul", {hidden, m}), axis1}, {{"keepdims", int64_t{0}}});
      parts.push_back(g.op("Div", {sum, mode == Mode::kMean ? counts : g.op("Sqrt", {counts})}));
    }
  }
  auto pooled = parts.size() == 1 ? parts.front() : g.op("Concat", parts, {{"axis", int64_t{1}}});
  for (size_t i = 0; i < dense.size(); ++i)
    pooled = g.activation(g.linear(pooled, dense[i].path + ".linear", dense[i].weight, dense[i].bias),
                          dense[i].activation);
  if (!normalize) return pooled;
  auto norm = g.op("ReduceL2", {pooled}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{1}}});
  return g.op("Div", {pooled, g.op("Max", {norm, g.float_constant(1e-12F)})});
}

}  // namespace headprune::models
