#include "models/sequence_classification.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/activation.h"
#include "models/errors.h"
#include "models/formats/onnx_graph.h"
#include "models/integer_key.h"

namespace headprune::models {

namespace {

/// Registers `module` at a dotted `path` under `root` ("classifier.out_proj": a plain module
/// "classifier" holding "out_proj"), making the modules on the way.
void register_at(torch::nn::Module& root, const std::string& path, const std::shared_ptr<torch::nn::Module>& module) {
  torch::nn::Module* parent = &root;
  std::string rest = path;
  for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
    const auto name = rest.substr(0, dot);
    auto children = parent->named_children();
    parent = children.contains(name) ? children[name].get()
                                     : parent->register_module(name, std::make_shared<torch::nn::Module>()).get();
    rest = rest.substr(dot + 1);
  }
  parent->register_module(rest, module);
}

}  // namespace

SequenceClassificationHeadImpl::SequenceClassificationHeadImpl(ClassificationLayout head_layout, int64_t hidden_size,
                                                               std::vector<std::string> names)
    : layout(std::move(head_layout)), labels(std::move(names)) {
  if (!layout.dense_in_encoder) {
    dense = Linear(hidden_size, hidden_size, layout.dense_bias);
    register_at(*this, layout.dense, dense.ptr());
  }
  if (!layout.norm.empty()) {
    norm = Norm(LayerNormTag{}, hidden_size, layout.norm_eps, layout.norm_bias);
    register_at(*this, layout.norm, norm.ptr());
  }
  out_proj = Linear(hidden_size, num_labels());
  register_at(*this, layout.out_proj, out_proj.ptr());
}

Linear SequenceClassificationHeadImpl::dense_for(const AttentionModel& encoder) const {
  if (!layout.dense_in_encoder) return dense;
  for (const auto& item : encoder.named_modules("", false))
    if (item.key() == layout.dense)
      if (auto linear = std::dynamic_pointer_cast<LinearImpl>(item.value())) return Linear(linear);
  throw Error(fmt::format("the checkpoint has a classifier ({}) but its encoder has no {}: {} needs both",
                          layout.out_proj, layout.dense, layout.architecture));
}

torch::Tensor SequenceClassificationHeadImpl::forward(const AttentionModel& encoder,
                                                      const torch::Tensor& last_hidden_state,
                                                      const torch::Tensor& attention_mask) {
  auto pooled = last_hidden_state.select(1, 0);
  if (layout.pooling == "mean") {  // ModernBertForSequenceClassification: sum(h · mask) / sum(mask)
    const auto mask = attention_mask.defined() ? attention_mask.to(last_hidden_state.dtype()).unsqueeze(-1)
                                               : torch::ones_like(last_hidden_state.select(2, 0)).unsqueeze(-1);
    pooled = (last_hidden_state * mask).sum(1) / mask.sum(1);
  }
  auto x = hf_activation(dense_for(encoder)->forward(pooled), layout.activation);
  if (norm) x = norm->forward(x);
  return out_proj->forward(x);
}

std::string SequenceClassificationHeadImpl::add_to_onnx(OnnxGraph& g, const AttentionModel& encoder,
                                                        const std::string& last_hidden_state,
                                                        const std::string& attention_mask) const {
  const auto pre = dense_for(encoder);
  auto pooled = g.op("Gather", {last_hidden_state, g.int64_constant({0}, true)}, {{"axis", int64_t{1}}});
  if (layout.pooling == "mean") {
    const auto mask = g.op("Unsqueeze", {g.to_float(attention_mask), g.int64_constant({2})});
    const auto axis = g.int64_constant({1});
    pooled = g.op("Div", {g.op("ReduceSum", {g.op("Mul", {last_hidden_state, mask}), axis}, {{"keepdims", int64_t{0}}}),
                          g.op("ReduceSum", {mask, axis}, {{"keepdims", int64_t{0}}})});
  }
  auto hidden = g.activation(g.linear(pooled, layout.dense, pre->weight, pre->bias), layout.activation);
  if (norm) hidden = norm->add_to_onnx(g, hidden, layout.norm);
  return g.linear(hidden, layout.out_proj, out_proj->weight, out_proj->bias);
}

std::vector<std::string> label_names(const ModelConfig& config, int64_t num_labels) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < num_labels; ++i) names.push_back(fmt::format("LABEL_{}", i));
  const auto it = config.raw.find("id2label");
  if (it == config.raw.end() || !it->is_object()) return names;
  for (const auto& [key, value] : it->items()) {
    const int64_t id = parse_integer_key(key).value_or(-1);
    if (id < 0 || id >= num_labels)
      throw Error(fmt::format("config.json id2label has key '{}', but the classifier has {} "
                              "labels (ids 0..{})",
                              key, num_labels, num_labels - 1));
    if (!value.is_string())
      throw Error(fmt::format("config.json id2label['{}'] must be a string", key));
    names[static_cast<size_t>(id)] = value.get<std::string>();
  }
  return names;
}

}  // namespace headprune::models
