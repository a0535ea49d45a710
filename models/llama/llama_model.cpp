#include "models/llama/llama_model.h"

#include <algorithm>
#include <limits>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/activation.h"
#include "models/attention_kernel.h"
#include "models/llama/fused_projections.h"
#include "models/llama/llama_family.h"
#include "models/errors.h"
#include "models/ffn_neurons.h"
#include "models/layer_checkpoint.h"
#include "models/layer_list.h"

namespace headprune::models {

namespace {

/// The norm of the stack's residual stream for `c` (models/config.h: layer_norm, rms_norm_offset).
Norm stack_norm(const ModelConfig& c) {
  if (c.layer_norm) return Norm(LayerNormTag{}, c.hidden_size, c.layer_norm_eps, c.norm_bias);
  return Norm(c.hidden_size, c.rms_norm_eps, c.rms_norm_offset);
}

}  // namespace

// ---------------------------------------------------------------- rotary embedding
torch::Tensor rope_inv_freq(int64_t head_dim, double theta, const RopeScaling& scaling) {
  // inv_freq[i] = theta^(-2i/d), i < d/2 (HF LlamaRotaryEmbedding, default rope type).
  auto exponent = torch::arange(0, head_dim, 2, torch::TensorOptions().dtype(torch::kLong))
                      .to(torch::kFloat) / static_cast<double>(head_dim);
  auto inv_freq = 1.0 / torch::pow(theta, exponent);
  if (!scaling.llama3) return inv_freq;
  // transformers' _compute_llama3_parameters, in float32 as there (RopeScaling's formula).
  const double L = static_cast<double>(scaling.original_max_position_embeddings);
  const auto wavelen = 2 * M_PI / inv_freq;
  auto scaled = torch::where(wavelen > L / scaling.low_freq_factor, inv_freq / scaling.factor, inv_freq);
  const auto smooth = (L / wavelen - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
  const auto smoothed = (1 - smooth) * scaled / scaling.factor + smooth * scaled;
  const auto medium = (wavelen >= L / scaling.high_freq_factor).logical_and(wavelen <= L / scaling.low_freq_factor);
  return torch::where(medium, smoothed, scaled);
}

std::pair<torch::Tensor, torch::Tensor> rotary_tables(int64_t seq_len, int64_t head_dim, double theta,
                                                      const RopeScaling& scaling, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  auto inv_freq = rope_inv_freq(head_dim, theta, scaling).to(device);
  auto positions = torch::arange(seq_len, opts);
  auto freqs = torch::outer(positions, inv_freq);  // [T, d/2]
  auto emb = torch::cat({freqs, freqs}, -1);       // [T, d]
  return {emb.cos(), emb.sin()};
}

namespace {

/// HF rotate_half: [x1, x2] -> [-x2, x1] over the last dimension.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

/// Which keys each of T new queries reads: [T, past + T] (bool, on `ids`' device), true where
/// key j <= past + i, query i being position past + i after `past` cached positions, and, with
/// a `window` > 0, j > past + i - window (HF's sliding_window_overlay).
torch::Tensor causal_allowed(int64_t T, int64_t past, int64_t window, const torch::Tensor& ids) {
  auto ones = torch::ones({T, past + T}, ids.options().dtype(torch::kBool));
  auto allowed = ones.tril(past);
  if (window > 0) allowed = allowed.logical_and(ones.triu(past - window + 1));
  return allowed;
}

/// Which keys each of T queries of an encoder reads: [T, T] (bool), every key, or with a `window`
/// > 0 those with |i - j| <= window / 2 (HF sliding_window_bidirectional_overlay with ModernBERT's
/// local_attention // 2).
torch::Tensor bidirectional_allowed(int64_t T, int64_t window, const torch::Tensor& ids) {
  auto ones = torch::ones({T, T}, ids.options().dtype(torch::kBool));
  if (window <= 0) return ones;
  return ones.tril(window / 2).logical_and(ones.triu(-(window / 2)));
}

/// The additive bias of a visibility mask, in x's dtype: 0 where allowed, the lowest float
/// elsewhere (as HF's causal mask, so a row with nothing visible stays finite).
torch::Tensor mask_bias_of(const torch::Tensor& allowed, const torch::Tensor& x) {
  return torch::zeros(allowed.sizes(), x.options()).masked_fill(allowed.logical_not(), mask_min(x.scalar_type()));
}

/// The cos/sin tables [T, head_dim] (in `like`'s dtype) of positions past..past+T-1 for each
/// layer (ModelConfig::rope_theta_of), each base computed once.
class LayerRotary {
 public:
  LayerRotary(const ModelConfig& c, int64_t past, int64_t T, const torch::Tensor& like)
      : c_(c), past_(past), T_(T), like_(like) {}
  const std::pair<torch::Tensor, torch::Tensor>& operator()(int64_t layer) {
    const double theta = c_.rope_theta_of(layer);
    auto& tables = by_theta_[theta];
    if (!tables.first.defined()) {
      auto [cos, sin] = rotary_tables(past_ + T_, c_.head_dim, theta, c_.rope_scaling, like_.device());
      tables = {cos.narrow(0, past_, T_).to(like_.scalar_type()), sin.narrow(0, past_, T_).to(like_.scalar_type())};
    }
    return tables;
  }

 private:
  const ModelConfig& c_;
  int64_t past_, T_;
  torch::Tensor like_;
  std::map<double, std::pair<torch::Tensor, torch::Tensor>> by_theta_;
};

/// The additive mask of each layer's window for T new queries after `past` cached positions
/// (causal_allowed, or bidirectional_allowed for an encoder, and the padding mask [B, T] when
/// defined), built once per window; undefined where every query sees every key (one new token
/// inside its window, an encoder's window covering the sequence; no padding), as
/// attention_context takes it.
class LayerMasks {
 public:
  LayerMasks(int64_t past, const torch::Tensor& ids, const torch::Tensor& padding, const torch::Tensor& like,
             bool bidirectional)
      : past_(past), ids_(ids), padding_(padding), like_(like), bidirectional_(bidirectional) {}
  const torch::Tensor& operator()(int64_t window) {
    auto& bias = by_window_[window];
    const int64_t B = ids_.size(0), T = ids_.size(1);
    const bool windowed = window > 0 && (bidirectional_ ? T - 1 > window / 2 : past_ + T > window);
    if (bias.defined() || !((T > 1 && !bidirectional_) || padding_.defined() || windowed)) return bias;
    auto allowed = (bidirectional_ ? bidirectional_allowed(T, window, ids_) : causal_allowed(T, past_, window, ids_))
                       .view({1, 1, T, past_ + T});
    if (padding_.defined()) allowed = allowed.logical_and(padding_.to(torch::kBool).view({B, 1, 1, T}));
    return bias = mask_bias_of(allowed, like_);
  }

 private:
  int64_t past_;
  torch::Tensor ids_, padding_, like_;
  bool bidirectional_;
  std::map<int64_t, torch::Tensor> by_window_;
};

/// g when query heads 0..g-1 read KV head 0, g..2g-1 KV head 1, and so on (every group whole and
/// in order), else 0.
int64_t consecutive_group_size(const std::vector<int64_t>& kv_of_query, int64_t num_kv_heads) {
  const auto heads = static_cast<int64_t>(kv_of_query.size());
  if (num_kv_heads < 1 || heads % num_kv_heads != 0) return 0;
  const int64_t group = heads / num_kv_heads;
  for (int64_t i = 0; i < heads; ++i)
    if (kv_of_query[static_cast<size_t>(i)] != i / group) return 0;
  return group;
}

}  // namespace

// ---------------------------------------------------------------- attention
std::vector<int64_t> local_kv_of_query(const std::vector<int64_t>& kept_heads,
                                       const std::vector<int64_t>& kept_kv, int64_t group) {
  std::vector<int64_t> out;
  for (auto h : kept_heads) {
    auto it = std::lower_bound(kept_kv.begin(), kept_kv.end(), h / group);
    if (it == kept_kv.end() || *it != h / group)
      throw Error(fmt::format("query head {} needs KV head {}, which is not present", h, h / group));
    out.push_back(it - kept_kv.begin());
  }
  return out;
}

LlamaAttentionImpl::LlamaAttentionImpl(const ModelConfig& c, std::vector<int64_t> kv_of_query_,
                                       int64_t num_kv_heads_)
    : num_heads(static_cast<int64_t>(kv_of_query_.size())),
      num_kv_heads(num_kv_heads_),
      head_dim(c.head_dim),
      kv_of_query(std::move(kv_of_query_)) {
  const int64_t H = c.hidden_size;
  const bool qkv_bias = c.family().has_qkv_bias(c);
  q_proj = register_module("q_proj", Linear(H, num_heads * head_dim, qkv_bias));
  k_proj = register_module("k_proj", Linear(H, num_kv_heads * head_dim, qkv_bias));
  v_proj = register_module("v_proj", Linear(H, num_kv_heads * head_dim, qkv_bias));
  o_proj = register_module("o_proj", Linear(num_heads * head_dim, H, c.family().has_output_bias(c)));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", Norm(head_dim, c.rms_norm_eps, c.rms_norm_offset));
    k_norm = register_module("k_norm", Norm(head_dim, c.rms_norm_eps, c.rms_norm_offset));
  }
  // attention_context scales by head_dim^-1/2; Gemma's scores scale by query_pre_attn_scalar^-1/2.
  if (c.query_pre_attn_scalar > 0.0 && c.query_pre_attn_scalar != static_cast<double>(head_dim))
    query_scale = std::sqrt(static_cast<double>(head_dim) / c.query_pre_attn_scalar);
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& mask_bias,
                                          const torch::Tensor& cos, const torch::Tensor& sin,
                                          const torch::Tensor& multiplier, torch::Tensor* past_keys,
                                          torch::Tensor* past_values) {
  const int64_t B = x.size(0), T = x.size(1);
  if (record_probs) probs = torch::zeros({B, 0, T, T}, x.options());
  if (num_heads == 0) {
    auto none = torch::zeros({B, T, 0}, x.options());
    if (record_context) context = none;
    return o_proj->forward(none);
  }
  // [B, T, n*d] -> [B, n, T, d]
  auto split = [&](const torch::Tensor& t, int64_t n) {
    return t.view({B, T, n, head_dim}).transpose(1, 2);
  };
  auto q = split(q_proj->forward(x), num_heads);
  auto k = split(k_proj->forward(x), num_kv_heads);
  auto v = split(v_proj->forward(x), num_kv_heads);
  if (q_norm) {  // Qwen3: over each head's head_dim, before RoPE
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  q = q * cos + rotate_half(q) * sin;
  k = k * cos + rotate_half(k) * sin;
  if (query_scale != 1.0) q = q * query_scale;
  if (past_keys) {
    if (past_keys->defined()) {
      k = torch::cat({*past_keys, k}, 2);
      v = torch::cat({*past_values, v}, 2);
    }
    *past_keys = k;
    *past_values = v;
  }
  torch::Tensor context;  // [B, h, T, d]
  if (const int64_t group = T == 1 && !record_probs ? consecutive_group_size(kv_of_query, num_kv_heads) : 0) {
    // One new token: each KV head's query heads become rows of one query against it, so the
    // keys and values are read where they lie instead of being copied out to every query head.
    const auto rows = attention_context(q.reshape({B, num_kv_heads, group, head_dim}), k, v, mask_bias);
    context = rows.reshape({B, num_heads, 1, head_dim});
  } else {
    // Each query head reads its own KV head (groups may be uneven after pruning).
    auto index = torch::tensor(kv_of_query, torch::kLong).to(x.device());
    context = attention_context(q, k.index_select(1, index), v.index_select(1, index), mask_bias,
                                record_probs ? &probs : nullptr);
  }
  if (multiplier.defined()) context = context * multiplier.view({1, num_heads, 1, 1});
  auto joined = context.transpose(1, 2).reshape({B, T, num_heads * head_dim});
  if (record_context) this->context = joined.detach();
  return o_proj->forward(joined);
}

// ---------------------------------------------------------------- MLP and layer
LlamaMLPImpl::LlamaMLPImpl(const ModelConfig& c, int64_t intermediate_size) : hidden_act_(c.hidden_act) {
  gate_proj = register_module("gate_proj", Linear(c.hidden_size, intermediate_size, c.mlp_bias));
  up_proj = register_module("up_proj", Linear(c.hidden_size, intermediate_size, c.mlp_bias));
  down_proj = register_module("down_proj", Linear(intermediate_size, c.hidden_size, c.mlp_bias));
}

torch::Tensor LlamaMLPImpl::forward(const torch::Tensor& x, const torch::Tensor& multiplier) {
  auto gate = gate_proj->forward(x);
  auto h = hf_activation(gate, hidden_act_) * up_proj->forward(x);
  if (multiplier.defined()) h = h * multiplier.to(h.dtype());
  if (record_activation) activation = h.detach();
  return down_proj->forward(h);
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const ModelConfig& c,
                                             std::vector<int64_t> kv_of_query,
                                             int64_t num_kv_heads, int64_t intermediate_size, bool input_norm) {
  self_attn = register_module("self_attn",
                              LlamaAttention(c, std::move(kv_of_query), num_kv_heads));
  mlp = register_module("mlp", LlamaMLP(c, intermediate_size));
  auto norm = [&](const char* name) { return register_module(name, stack_norm(c)); };
  if (input_norm) input_layernorm = norm("input_layernorm");
  post_attention_layernorm = norm("post_attention_layernorm");
  if (c.sandwich_norms) {
    pre_feedforward_layernorm = norm("pre_feedforward_layernorm");
    post_feedforward_layernorm = norm("post_feedforward_layernorm");
  }
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor& x,
                                             const torch::Tensor& mask_bias,
                                             const torch::Tensor& cos, const torch::Tensor& sin,
                                             const torch::Tensor& multiplier, const torch::Tensor& ffn_multiplier,
                                             torch::Tensor* past_keys, torch::Tensor* past_values) {
  const auto normed = input_layernorm ? input_layernorm->forward(x) : x;  // ModernBERT's layer 0 has none
  auto attn = self_attn->forward(normed, mask_bias, cos, sin, multiplier, past_keys, past_values);
  if (self_attn->record_context) io = {x.detach(), self_attn->context};
  if (!pre_feedforward_layernorm) {  // LLaMA
    auto h = x + attn;
    auto out = mlp->forward(post_attention_layernorm->forward(h), ffn_multiplier);
    if (mlp->record_activation) ffn_io = {h.detach(), mlp->activation};
    return h + out;
  }
  auto h = x + post_attention_layernorm->forward(attn);  // Gemma's sandwich norms
  return h + post_feedforward_layernorm->forward(mlp->forward(pre_feedforward_layernorm->forward(h), ffn_multiplier));
}

void LlamaDecoderLayerImpl::set_record_io(bool on) {
  self_attn->record_context = on;
  mlp->record_activation = on;
  if (!on) {
    io = ffn_io = {};
    mlp->activation = torch::Tensor();
  }
}

// ---------------------------------------------------------------- model
LlamaModel::LlamaModel(ModelConfig config) : config_(std::move(config)) {
  // LLaMA and the families that compute as it does (models/llama/llama_family.h, LlamaFamily).
  if (!dynamic_cast<const llama::LlamaFamily*>(&config_.family()))
    throw Error(fmt::format("LlamaModel cannot hold a '{}' model", config_.model_type));
  auto model = register_module("model", std::make_shared<torch::nn::Module>());
  auto embedding = torch::nn::EmbeddingOptions(config_.vocab_size, config_.hidden_size);
  if (ScopedUnfilledWeights::active()) embedding._weight(torch::empty({config_.vocab_size, config_.hidden_size}));
  embed_tokens = model->register_module("embed_tokens", torch::nn::Embedding(embedding));
  if (config_.embedding_norm) embed_norm = model->register_module("embed_norm", stack_norm(config_));
  auto layer_list = model->register_module("layers", torch::nn::ModuleList());
  const auto kept_kv = config_.kept_kv_heads();
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    auto kv_of_query =
        local_kv_of_query(config_.kept_heads[l], kept_kv[l], config_.kv_group_size());
    layers.push_back(LlamaDecoderLayer(config_, std::move(kv_of_query), static_cast<int64_t>(kept_kv[l].size()),
                                       config_.ffn_width(l),
                                       l > 0 || config_.first_layer_input_norm));
    layer_list->push_back(layers.back());
  }
  norm = model->register_module("norm", stack_norm(config_));
  if (config_.family().has_lm_head() && !config_.tie_word_embeddings)
    lm_head = register_module("lm_head", Linear(config_.hidden_size, config_.vocab_size, false));
}

ModelOutput LlamaModel::forward(const ModelInputs& inputs, const Multipliers& multipliers) {
  const auto& ids = inputs.input_ids;
  if (ids.dim() != 2) throw Error("input_ids must have shape [batch, seq]");
  const int64_t T = ids.size(1);
  if (T > config_.max_position_embeddings)
    throw Error(fmt::format("sequence of {} tokens is longer than max_position_embeddings {}; "
                            "lower --max-length",
                            T, config_.max_position_embeddings));
  auto x = embed(ids);
  if (inputs.attention_mask.defined() && inputs.attention_mask.sizes() != ids.sizes())
    throw Error(fmt::format("attention_mask has shape [{}], input_ids [{}]",
                            fmt::join(inputs.attention_mask.sizes(), ","), fmt::join(ids.sizes(), ",")));
  // Key j is visible to query i when j <= i (an encoder: any j) inside the layer's window and j is not padding.
  LayerMasks mask_bias(0, ids, inputs.attention_mask, x, config_.bidirectional);
  LayerRotary rotary(config_, 0, T, x);
  std::vector<torch::Tensor> hidden_states;
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
    auto& layer = layers[static_cast<size_t>(l)];
    const auto m = layer_multiplier(multipliers.heads, l, config_.num_hidden_layers, layer->self_attn->num_heads, "head");
    const auto f = layer_multiplier(multipliers.ffn, l, config_.num_hidden_layers, layer->mlp->down_proj->weight.size(1), "FFN");
    const auto& [cos, sin] = rotary(l);
    const auto& bias = mask_bias(config_.window_of(l));
    x = checkpointed(l, m.defined() ? m : f) ? checkpointed_forward(l, x, bias, cos, sin, m, f)
                                             : layer->forward(x, bias, cos, sin, m, f);
    if (output_hidden_states()) hidden_states.push_back(x);
  }
  x = norm->forward(x);
  ModelOutput out{x, compute_logits() ? lm_logits(x) : torch::Tensor(), {}, {}, std::move(hidden_states), {}};
  for (auto& layer : layers)
    if (layer->self_attn->record_probs) out.attentions.push_back(layer->self_attn->probs);
  for (auto& layer : layers)
    if (layer->self_attn->record_context) {
      out.attention_io.push_back(layer->io);
      if (layer->ffn_io.context.defined()) out.ffn_io.push_back(layer->ffn_io);
    }
  return out;
}

torch::Tensor LlamaModel::forward_cached(const torch::Tensor& ids, KvCache& cache) {
  if (ids.dim() != 2 || ids.size(1) == 0) throw Error("input_ids must have shape [batch, seq] with seq >= 1");
  if (!config_.family().has_lm_head())
    throw Error(fmt::format("a '{}' model is an encoder: it has no language-model head to generate with",
                            config_.model_type));
  const int64_t L = config_.num_hidden_layers, past = cache.length, T = ids.size(1);
  if (past + T > config_.max_position_embeddings)
    throw Error(fmt::format("{} cached and {} new tokens are more than max_position_embeddings {}", past, T,
                            config_.max_position_embeddings));
  cache.keys.resize(static_cast<std::size_t>(L));
  cache.values.resize(static_cast<std::size_t>(L));
  auto x = embed(ids);
  // New token i (position past + i) sees the cached keys (inside the layer's window) and the
  // new keys up to itself.
  LayerMasks mask_bias(past, ids, {}, x, false);
  LayerRotary rotary(config_, past, T, x);
  for (int64_t l = 0; l < L; ++l) {
    const auto& [cos, sin] = rotary(l);
    x = layers[l]->forward(x, mask_bias(config_.window_of(l)), cos, sin, {}, {}, &cache.keys[l], &cache.values[l]);
  }
  cache.length = past + T;
  return lm_logits(norm->forward(x));
}

TensorMap LlamaModel::weights_from_file(TensorMap weights, const std::string& source) const {
  if (!config_.fused_projections) return weights;
  return llama::split_fused_projections(std::move(weights), config_, source);
}

TensorMap LlamaModel::weights_to_file(TensorMap weights) const {
  return config_.fused_projections ? llama::fuse_projections(std::move(weights), config_) : weights;
}

torch::Tensor LlamaModel::embed(const torch::Tensor& ids) {
  auto x = embed_tokens->forward(ids).to(compute_dtype());
  // Gemma: times sqrt(hidden_size) as a tensor of the weights' dtype (Gemma3TextScaledWordEmbedding).
  if (config_.embed_scale != 1.0) x = x * torch::scalar_tensor(config_.embed_scale, x.options());
  return embed_norm ? embed_norm->forward(x) : x;  // ModernBERT's embeddings.norm
}

torch::Tensor LlamaModel::lm_head_weight() const {
  if (!config_.family().has_lm_head()) return {};
  return lm_head ? lm_head->weight : embed_tokens->weight;
}

torch::Tensor LlamaModel::lm_logits(const torch::Tensor& normed) const {
  const auto weight = lm_head_weight();
  return weight.defined() ? widened_linear(normed, weight) : torch::Tensor();
}

std::set<std::string> LlamaModel::narrow_storage_weights() const { return matrix_weight_names(*this); }

bool LlamaModel::checkpointed(int64_t layer, const torch::Tensor& multipliers) const {
  if (!checkpoint_layers() || !torch::GradMode::is_enabled() || !multipliers.defined()) return false;
  const auto params = layers[layer]->parameters();
  return std::none_of(params.begin(), params.end(), [](const torch::Tensor& p) { return p.requires_grad(); });
}

torch::Tensor LlamaModel::checkpointed_forward(int64_t l, const torch::Tensor& x, const torch::Tensor& bias,
                                               const torch::Tensor& cos, const torch::Tensor& sin,
                                               const torch::Tensor& m, const torch::Tensor& f) {
  auto* layer = layers[static_cast<size_t>(l)].ptr().get();
  if (!f.defined())
    return checkpointed_layer([layer, bias, cos, sin](const torch::Tensor& h, const torch::Tensor& g) {
      return layer->forward(h, bias, cos, sin, g, {});
    }, x, m);
  // One tensor for checkpointed_layer: the head multipliers (ones when none, an exact no-op) then the FFN's.
  const int64_t heads = layer->self_attn->num_heads;
  const auto packed = torch::cat({m.defined() ? m : torch::ones({heads}, f.options()), f});
  return checkpointed_layer([layer, bias, cos, sin, heads](const torch::Tensor& h, const torch::Tensor& g) {
    return layer->forward(h, bias, cos, sin, g.narrow(0, 0, heads), g.narrow(0, heads, g.size(0) - heads));
  }, x, packed);
}

void LlamaModel::set_output_attentions(bool on) {
  for (auto& layer : layers) layer->self_attn->record_probs = on;
}

void LlamaModel::set_record_attention_io(bool on) {
  for (auto& layer : layers) layer->set_record_io(on);
}

Linear LlamaModel::output_projection(int64_t layer) const { return layers.at(layer)->self_attn->o_proj; }

Linear LlamaModel::ffn_output_projection(int64_t layer) const { return layers.at(layer)->mlp->down_proj; }

QueryKeyWeights LlamaModel::query_key_weights(int64_t layer) const {
  const auto& attn = layers.at(layer)->self_attn;
  const auto H = config_.hidden_size;
  auto query = attn->q_proj->weight.detach().to(compute_dtype()).reshape({attn->num_heads, attn->head_dim, H});
  auto key = attn->k_proj->weight.detach().to(compute_dtype()).reshape({attn->num_kv_heads, attn->head_dim, H});
  if (attn->q_norm) {  // Qwen3, Gemma: the norms' scales multiply the rows (their per-token 1/RMS does not change the rank)
    query = query * (attn->q_norm->weight.detach() + attn->q_norm->offset()).view({1, attn->head_dim, 1});
    key = key * (attn->k_norm->weight.detach() + attn->k_norm->offset()).view({1, attn->head_dim, 1});
  }
  return {query, key.index_select(0, torch::tensor(attn->kv_of_query, torch::kLong))};
}

void LlamaModel::prune_heads(int64_t layer, const std::vector<int64_t>& remove_local,
                             const torch::Tensor& scale) {
  if (layer < 0 || layer >= config_.num_hidden_layers)
    throw Error(fmt::format("layer {} is out of range (the model has {} layers)", layer,
                            config_.num_hidden_layers));
  auto& attn = layers[layer]->self_attn;
  const int64_t h = attn->num_heads, d = attn->head_dim;
  kept_positions(layer, h, remove_local, "query head");  // checks the indices
  const std::set<int64_t> removed(remove_local.begin(), remove_local.end());
  if (scale.defined() && (scale.dim() != 1 || scale.size(0) != h))
    throw Error(fmt::format("layer {}: gate scale must have shape [{}]", layer, h));

  std::vector<int64_t> q_rows, removed_original;
  std::set<int64_t> kv_used;
  for (int64_t i = 0; i < h; ++i) {
    if (removed.count(i)) {
      removed_original.push_back(config_.kept_heads[layer][i]);
      continue;
    }
    kv_used.insert(attn->kv_of_query[i]);
    for (int64_t r = 0; r < d; ++r) q_rows.push_back(i * d + r);
  }
  std::vector<int64_t> kv_rows;
  for (auto g : kv_used)
    for (int64_t r = 0; r < d; ++r) kv_rows.push_back(g * d + r);

  torch::NoGradGuard no_grad;
  const auto device = attn->o_proj->weight.device();
  auto keep = [&](Linear& lin, const std::vector<int64_t>& rows) {
    auto index = torch::tensor(rows, torch::kLong).to(device);
    lin->weight.set_data(lin->weight.index_select(0, index).contiguous());
    if (lin->bias.defined()) lin->bias.set_data(lin->bias.index_select(0, index).contiguous());
  };
  keep(attn->q_proj, q_rows);
  keep(attn->k_proj, kv_rows);
  keep(attn->v_proj, kv_rows);
  auto o = attn->o_proj->weight;  // [H, h*d]
  if (scale.defined())  // in the compute dtype, then rounded once to a narrow weight's own
    o = (o.view({o.size(0), h, d}).to(compute_dtype()) * scale.to(device, compute_dtype()).view({1, h, 1}))
            .view({o.size(0), h * d})
            .to(o.scalar_type());
  attn->o_proj->weight.set_data(
      o.index_select(1, torch::tensor(q_rows, torch::kLong).to(device)).contiguous());

  config_.remove_heads(layer, removed_original);
  const auto kept_kv = config_.kept_kv_heads()[layer];
  attn->kv_of_query =
      local_kv_of_query(config_.kept_heads[layer], kept_kv, config_.kv_group_size());
  attn->num_heads = static_cast<int64_t>(config_.kept_heads[layer].size());
  attn->num_kv_heads = static_cast<int64_t>(kept_kv.size());
}

void LlamaModel::prune_ffn(int64_t layer, const std::vector<int64_t>& remove_local, const torch::Tensor& scale) {
  if (layer < 0 || layer >= config_.num_hidden_layers)
    throw Error(fmt::format("layer {} is out of range (the model has {} layers)", layer, config_.num_hidden_layers));
  auto& mlp = layers[static_cast<size_t>(layer)]->mlp;
  const auto kept = kept_positions(layer, mlp->down_proj->weight.size(1), remove_local, "FFN neuron");
  keep_ffn_neurons({mlp->gate_proj, mlp->up_proj}, mlp->down_proj, kept, scale, compute_dtype());
  config_.set_ffn_width(layer, static_cast<int64_t>(kept.size()));
}

std::vector<torch::Tensor> LlamaModel::layer_parameters(int64_t layer) const {
  return parameters_of_layer(layers, layer);
}

void LlamaModel::drop_layers(const std::vector<int64_t>& drop) {
  // HF builds layer 0 without an input norm (ModernBERT): the layer moving into its place would lose its own.
  if (std::find(drop.begin(), drop.end(), 0) != drop.end() && !config_.droppable_layer(0) && drop.size() < layers.size())
    throw Error(fmt::format("layer 0 of a '{}' model cannot be removed: the first layer is built without its "
                            "attention norm, so the layer moved into its place would lose its own",
                            config_.model_type));
  config_.remove_layers(drop);  // validates before anything changes
  remove_from_layer_list(layers, drop, *named_children()["model"], "layers");
}

int64_t LlamaModel::attention_parameter_count() const {
  int64_t n = 0;
  for (const auto& layer : layers)
    for (const auto& p : layer->self_attn->parameters()) n += p.numel();
  return n;
}

std::shared_ptr<AttentionModel> llama::make_model(const ModelConfig& config,
                                                  const std::set<std::string>&) {
  return std::make_shared<LlamaModel>(config);
}

}  // namespace headprune::models
