#include "models/bert/bert_model.h"

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/activation.h"
#include "models/attention_kernel.h"
#include "models/bert/bert_family.h"
#include "models/errors.h"
#include "models/ffn_neurons.h"
#include "models/layer_list.h"
#include "models/relative_position.h"

namespace headprune::models {

// ---------------------------------------------------------------- self-attention
BertSelfAttentionImpl::BertSelfAttentionImpl(int64_t hidden_size, int64_t num_heads_,
                                             int64_t head_dim_)
    : num_heads(num_heads_), head_dim(head_dim_) {
  query = register_module("query", Linear(hidden_size, num_heads * head_dim));
  key = register_module("key", Linear(hidden_size, num_heads * head_dim));
  value = register_module("value", Linear(hidden_size, num_heads * head_dim));
}

torch::Tensor BertSelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                                             const torch::Tensor& multiplier) {
  const int64_t B = x.size(0), T = x.size(1);
  if (record_probs) probs = torch::zeros({B, 0, T, T}, x.options());
  if (num_heads == 0) return torch::zeros({B, T, 0}, x.options());
  // [B, T, h*d] -> [B, h, T, d]
  auto split = [&](const torch::Tensor& t) {
    return t.view({B, T, num_heads, head_dim}).transpose(1, 2);
  };
  auto q = split(query->forward(x));
  auto k = split(key->forward(x));
  auto v = split(value->forward(x));
  auto context = attention_context(q, k, v, mask_bias, record_probs ? &probs : nullptr);  // [B, h, T, d]
  if (multiplier.defined()) context = context * multiplier.view({1, num_heads, 1, 1});
  return context.transpose(1, 2).reshape({B, T, num_heads * head_dim});
}

// ---------------------------------------------------------------- projections
BertProjectionImpl::BertProjectionImpl(int64_t in_features, int64_t hidden_size, double eps) {
  dense = register_module("dense", Linear(in_features, hidden_size));
  LayerNorm = register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden_size}).eps(eps)));
}

torch::Tensor BertProjectionImpl::forward(const torch::Tensor& x, const torch::Tensor& residual) {
  return LayerNorm->forward(dense->forward(x) + residual);
}

BertAttentionImpl::BertAttentionImpl(const ModelConfig& config, int64_t num_heads) {
  self = register_module("self",
                         BertSelfAttention(config.hidden_size, num_heads, config.head_dim));
  output = register_module("output", BertProjection(num_heads * config.head_dim,
                                                    config.hidden_size, config.layer_norm_eps));
}

torch::Tensor BertAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                                         const torch::Tensor& multiplier) {
  auto context = self->forward(x, mask_bias, multiplier);
  if (record_io) io = {x.detach(), context.detach()};
  return output->forward(context, x);
}

BertIntermediateImpl::BertIntermediateImpl(int64_t hidden_size, int64_t intermediate_size,
                                           std::string hidden_act)
    : hidden_act_(std::move(hidden_act)) {
  dense = register_module("dense", Linear(hidden_size, intermediate_size));
}

torch::Tensor BertIntermediateImpl::forward(const torch::Tensor& x) {
  auto h = dense->forward(x);
  return hf_activation(h, hidden_act_);
}

BertLayerImpl::BertLayerImpl(const ModelConfig& config, int64_t num_heads, int64_t intermediate_size) {
  attention = register_module("attention", BertAttention(config, num_heads));
  intermediate = register_module("intermediate",
                                 BertIntermediate(config.hidden_size, intermediate_size, config.hidden_act));
  output = register_module("output", BertProjection(intermediate_size, config.hidden_size, config.layer_norm_eps));
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                                     const torch::Tensor& multiplier, const torch::Tensor& ffn_multiplier) {
  auto a = attention->forward(x, mask_bias, multiplier);
  auto h = intermediate->forward(a);
  if (ffn_multiplier.defined()) h = h * ffn_multiplier.to(h.dtype());
  if (attention->record_io) ffn_io = {a.detach(), h.detach()};
  return output->forward(h, a);
}

// ---------------------------------------------------------------- embeddings
BertEmbeddingsImpl::BertEmbeddingsImpl(const ModelConfig& c) : position_padding_idx_(c.position_padding_idx) {
  word_embeddings = register_module("word_embeddings",
                                    torch::nn::Embedding(c.vocab_size, c.hidden_size));
  position_embeddings = register_module(
      "position_embeddings", torch::nn::Embedding(c.max_position_embeddings, c.hidden_size));
  if (c.type_vocab_size > 0)
    token_type_embeddings = register_module(
        "token_type_embeddings", torch::nn::Embedding(c.type_vocab_size, c.hidden_size));
  LayerNorm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden_size}).eps(c.layer_norm_eps)));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& input_ids,
                                          const torch::Tensor& token_type_ids) {
  torch::Tensor positions;
  if (position_padding_idx_ >= 0) {  // HF create_position_ids_from_input_ids
    const auto real = input_ids.ne(position_padding_idx_).to(torch::kLong);
    positions = real.cumsum(1) * real + position_padding_idx_;
  } else {
    positions = torch::arange(input_ids.size(1), input_ids.options()).unsqueeze(0);
  }
  auto e = word_embeddings->forward(input_ids) + position_embeddings->forward(positions);
  if (token_type_embeddings)
    e = e + token_type_embeddings->forward(token_type_ids.defined() ? token_type_ids
                                                                     : torch::zeros_like(input_ids));
  return LayerNorm->forward(e);
}

// ---------------------------------------------------------------- model
BertModel::BertModel(ModelConfig config, bool with_pooler) : config_(std::move(config)) {
  if (config_.num_key_value_heads != config_.num_attention_heads)
    throw Error(fmt::format("BertModel cannot hold a '{}' model: it has {} key/value heads for {} "
                            "query heads",
                            config_.model_type, config_.num_key_value_heads,
                            config_.num_attention_heads));
  embeddings = register_module("embeddings", BertEmbeddings(config_));
  auto encoder = register_module("encoder", std::make_shared<torch::nn::Module>());
  auto layer_list = encoder->register_module("layer", torch::nn::ModuleList());
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    layers.push_back(BertLayer(config_, static_cast<int64_t>(config_.kept_heads[l].size()),
                               config_.ffn_width(l)));
    layer_list->push_back(layers.back());
  }
  if (config_.relative_attention_num_buckets > 0)
    relative_attention_bias = encoder->register_module(
        "relative_attention_bias",
        torch::nn::Embedding(config_.relative_attention_num_buckets, config_.num_attention_heads));
  if (with_pooler) {
    auto pooler = register_module("pooler", std::make_shared<torch::nn::Module>());
    pooler_dense = pooler->register_module("dense", Linear(config_.hidden_size, config_.hidden_size));
  }
}

ModelOutput BertModel::forward(const ModelInputs& inputs, const Multipliers& multipliers) {
  const auto& ids = inputs.input_ids;
  if (ids.dim() != 2) throw Error("input_ids must have shape [batch, seq]");
  const int64_t max_tokens = config_.usable_positions();
  if (ids.size(1) > max_tokens)
    throw Error(fmt::format("sequence of {} tokens is longer than the {} positions the model has; "
                            "lower --max-length",
                            ids.size(1), max_tokens));
  auto x = embeddings->forward(ids, inputs.token_type_ids);
  auto mask = inputs.attention_mask.defined() ? inputs.attention_mask : torch::ones_like(ids);
  // HF's extended attention mask: (1 - mask) * finfo(dtype).min, broadcast over heads and
  // queries; none for an unpadded batch (every key visible), so SDPA runs without a mask.
  torch::Tensor mask_bias;
  if (!mask.all().item<bool>())
    mask_bias = (1.0 - mask.to(x.dtype())).view({ids.size(0), 1, 1, ids.size(1)}) * mask_min(x.scalar_type());
  const auto position_bias = relative_position_bias(ids.size(1), x);
  std::vector<torch::Tensor> hidden_states;
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    auto& layer = layers[static_cast<size_t>(l)];
    const auto m = layer_multiplier(multipliers.heads, l, config_.num_hidden_layers, layer->attention->self->num_heads, "head");
    const auto f = layer_multiplier(multipliers.ffn, l, config_.num_hidden_layers, layer->output->dense->weight.size(1), "FFN");
    x = layer->forward(x, layer_bias(l, position_bias, mask_bias), m, f);
    if (output_hidden_states()) hidden_states.push_back(x);
  }
  ModelOutput out{x, {}, {}, {}, std::move(hidden_states), {}};
  for (auto& layer : layers)
    if (layer->attention->self->record_probs) out.attentions.push_back(layer->attention->self->probs);
  for (auto& layer : layers)
    if (layer->attention->record_io) {
      out.attention_io.push_back(layer->attention->io);
      out.ffn_io.push_back(layer->ffn_io);
    }
  return out;
}

torch::Tensor BertModel::relative_position_bias(int64_t seq_len, const torch::Tensor& like) const {
  if (!relative_attention_bias) return {};
  // MPNetFamily refuses a table of fewer than kMpnetBuckets rows.
  const auto buckets = relative_position_bucket(seq_len, kMpnetBuckets, kMpnetMaxDistance, like.device());
  return torch::embedding(relative_attention_bias->weight, buckets).permute({2, 0, 1}).unsqueeze(0).to(like.dtype());
}

torch::Tensor BertModel::layer_bias(int64_t layer, const torch::Tensor& position_bias,
                                    const torch::Tensor& mask_bias) const {
  if (!position_bias.defined()) return mask_bias;
  const auto& kept = config_.kept_heads.at(static_cast<size_t>(layer));
  auto bias = position_bias.index_select(1, torch::tensor(kept, torch::kLong).to(position_bias.device()));
  return mask_bias.defined() ? bias + mask_bias : bias;
}

void BertModel::set_output_attentions(bool on) {
  for (auto& layer : layers) layer->attention->self->record_probs = on;
}

void BertModel::set_record_attention_io(bool on) {
  for (auto& layer : layers) {
    layer->attention->record_io = on;
    if (!on) layer->attention->io = layer->ffn_io = {};
  }
}

Linear BertModel::output_projection(int64_t layer) const { return layers.at(layer)->attention->output->dense; }

Linear BertModel::ffn_output_projection(int64_t layer) const { return layers.at(layer)->output->dense; }

QueryKeyWeights BertModel::query_key_weights(int64_t layer) const {
  const auto& self = layers.at(layer)->attention->self;
  const auto shape = std::vector<int64_t>{self->num_heads, self->head_dim, config_.hidden_size};
  return {self->query->weight.detach().reshape(shape), self->key->weight.detach().reshape(shape)};
}

void BertModel::prune_heads(int64_t layer, const std::vector<int64_t>& remove_local,
                            const torch::Tensor& scale) {
  if (layer < 0 || layer >= config_.num_hidden_layers)
    throw Error(fmt::format("layer {} is out of range (the model has {} layers)", layer,
                            config_.num_hidden_layers));
  auto& self = layers[layer]->attention->self;
  auto& out = layers[layer]->attention->output->dense;
  const int64_t h = self->num_heads, d = self->head_dim;
  kept_positions(layer, h, remove_local, "head");  // checks the indices
  const std::set<int64_t> removed(remove_local.begin(), remove_local.end());
  if (scale.defined() && (scale.dim() != 1 || scale.size(0) != h))
    throw Error(fmt::format("layer {}: gate scale must have shape [{}]", layer, h));

  std::vector<int64_t> keep_rows, removed_original;
  for (int64_t i = 0; i < h; ++i) {
    if (removed.count(i)) {
      removed_original.push_back(config_.kept_heads[layer][i]);
      continue;
    }
    for (int64_t r = 0; r < d; ++r) keep_rows.push_back(i * d + r);
  }
  torch::NoGradGuard no_grad;
  const auto device = out->weight.device();
  auto rows = torch::tensor(keep_rows, torch::kLong).to(device);
  for (auto* lin : {&self->query, &self->key, &self->value}) {
    (*lin)->weight.set_data((*lin)->weight.index_select(0, rows).contiguous());
    (*lin)->bias.set_data((*lin)->bias.index_select(0, rows).contiguous());
  }
  auto o = out->weight;  // [H, h*d]
  if (scale.defined())
    o = (o.view({o.size(0), h, d}) * scale.to(o.options()).view({1, h, 1})).view({o.size(0), h * d});
  out->weight.set_data(o.index_select(1, rows).contiguous());
  self->num_heads = h - static_cast<int64_t>(removed.size());
  config_.remove_heads(layer, removed_original);
}

void BertModel::prune_ffn(int64_t layer, const std::vector<int64_t>& remove_local, const torch::Tensor& scale) {
  if (layer < 0 || layer >= config_.num_hidden_layers)
    throw Error(fmt::format("layer {} is out of range (the model has {} layers)", layer, config_.num_hidden_layers));
  auto& block = layers[static_cast<size_t>(layer)];
  const auto width = block->output->dense->weight.size(1);
  const auto kept = kept_positions(layer, width, remove_local, "FFN neuron");
  keep_ffn_neurons({block->intermediate->dense}, block->output->dense, kept, scale, torch::kFloat32);
  config_.set_ffn_width(layer, static_cast<int64_t>(kept.size()));
}

std::vector<torch::Tensor> BertModel::layer_parameters(int64_t layer) const {
  return parameters_of_layer(layers, layer);
}

void BertModel::drop_layers(const std::vector<int64_t>& drop) {
  config_.remove_layers(drop);  // validates before anything changes
  remove_from_layer_list(layers, drop, *named_children()["encoder"], "layer");
}

int64_t BertModel::attention_parameter_count() const {
  int64_t n = 0;
  for (const auto& layer : layers) {
    for (const auto& p : layer->attention->self->parameters()) n += p.numel();
    for (const auto& p : layer->attention->output->dense->parameters()) n += p.numel();
  }
  return n;
}

std::shared_ptr<AttentionModel> bert::make_model(const ModelConfig& config,
                                                 const std::set<std::string>& weight_names) {
  return std::make_shared<BertModel>(config, weight_names.count("pooler.dense.weight") > 0);
}

}  // namespace headprune::models
