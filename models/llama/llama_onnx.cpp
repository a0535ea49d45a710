// HF LlamaForCausalLM as an ONNX graph (no KV cache): the same computation as
// llama_model.cpp's forward — RMSNorm (ModernBERT: LayerNorm), rotary positions 0..T-1, causal
// (an encoder: bidirectional) + padding mask, each query head reading its own KV head (uneven
// groups after pruning), gated MLP, LM head when the family has one.
#include <map>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/formats/onnx_graph.h"
#include "models/llama/llama_model.h"
#include "models/model_family.h"

namespace headprune::models {
namespace {

/// cos and sin tables [T, head_dim] for positions 0..T-1 (rotary_tables, in the graph).
std::pair<std::string, std::string> rotary_to_onnx(OnnxGraph& g, const std::string& seq_len, int64_t head_dim,
                                                   double theta, const RopeScaling& scaling, const std::string& name) {
  const auto inv_freq = rope_inv_freq(head_dim, theta, scaling);  // as rotary_tables
  auto positions = g.to_float(g.range(seq_len));
  auto freqs = g.op("Mul", {g.op("Unsqueeze", {positions, g.int64_constant({1})}), g.weight(name, inv_freq)});
  auto emb = g.op("Concat", {freqs, freqs}, {{"axis", int64_t{-1}}});
  return {g.op("Cos", {emb}), g.op("Sin", {emb})};
}

/// x·cos + rotate_half(x)·sin for x [B, n, T, d]; rotate_half([x1, x2]) = [-x2, x1].
std::string apply_rotary(OnnxGraph& g, const std::string& x, const std::string& cos, const std::string& sin,
                         int64_t head_dim) {
  const int64_t half = head_dim / 2;
  auto axis = g.int64_constant({3});
  auto x1 = g.op("Slice", {x, g.int64_constant({0}), g.int64_constant({half}), axis});
  auto x2 = g.op("Slice", {x, g.int64_constant({half}), g.int64_constant({head_dim}), axis});
  auto rotated = g.op("Concat", {g.op("Neg", {x2}), x1}, {{"axis", int64_t{3}}});
  return g.op("Add", {g.op("Mul", {x, cos}), g.op("Mul", {rotated, sin})});
}

/// 0 where key j is visible to query i (j <= i, i - window < j when `window` > 0; an encoder
/// (`bidirectional`): |i - j| <= window / 2 when `window` > 0, else every j; j not padding), lowest
/// float elsewhere: [B, 1, T, T].
std::string attention_mask_bias(OnnxGraph& g, const std::string& seq_len, int64_t window, bool bidirectional) {
  auto t = g.op("Unsqueeze", {seq_len, g.int64_constant({0})});
  auto visible = g.op("Expand", {g.float_constant(1.0F), g.op("Concat", {t, t}, {{"axis", int64_t{0}}})});
  if (!bidirectional) visible = g.op("Trilu", {visible}, {{"upper", int64_t{0}}});
  if (window > 0 && !bidirectional)  // keep j - i >= 1 - window
    visible = g.op("Trilu", {visible, g.int64_constant({1 - window}, /*scalar=*/true)}, {{"upper", int64_t{1}}});
  if (window > 0 && bidirectional) {  // keep -window/2 <= j - i <= window/2
    visible = g.op("Trilu", {visible, g.int64_constant({window / 2}, true)}, {{"upper", int64_t{0}}});
    visible = g.op("Trilu", {visible, g.int64_constant({-(window / 2)}, true)}, {{"upper", int64_t{1}}});
  }
  auto padding = g.op("Unsqueeze", {g.to_float("attention_mask"), g.int64_constant({1, 2})});
  return g.mask_bias(g.op("Mul", {visible, padding}));
}

std::string attention_to_onnx(OnnxGraph& g, const LlamaAttentionImpl& a, const std::string& prefix,
                              const std::string& x, const std::string& mask_bias,
                              const std::pair<std::string, std::string>& rotary) {
  const auto d = a.head_dim;
  auto q = g.split_heads(g.linear(x, prefix + "q_proj", a.q_proj->weight, a.q_proj->bias), a.num_heads, d);
  auto k = g.split_heads(g.linear(x, prefix + "k_proj", a.k_proj->weight, a.k_proj->bias), a.num_kv_heads, d);
  auto v = g.split_heads(g.linear(x, prefix + "v_proj", a.v_proj->weight, a.v_proj->bias), a.num_kv_heads, d);
  if (a.q_norm) {  // Qwen3, Gemma: over each head's head_dim, before RoPE
    q = a.q_norm->add_to_onnx(g, q, prefix + "q_norm");
    k = a.k_norm->add_to_onnx(g, k, prefix + "k_norm");
  }
  q = apply_rotary(g, q, rotary.first, rotary.second, d);
  k = apply_rotary(g, k, rotary.first, rotary.second, d);
  if (a.query_scale != 1.0) q = g.op("Mul", {q, g.float_constant(static_cast<float>(a.query_scale))});
  // Each query head reads its own KV head.
  auto index = g.int64_constant(a.kv_of_query);
  k = g.op("Transpose", {g.op("Gather", {k, index}, {{"axis", int64_t{1}}})},
           {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  v = g.op("Gather", {v, index}, {{"axis", int64_t{1}}});
  auto context = g.merge_heads(g.attention(q, k, v, mask_bias, d), a.num_heads, d);
  return g.linear(context, prefix + "o_proj", a.o_proj->weight, a.o_proj->bias);
}

/// The attention block's contribution to the residual stream (LLaMA: o_proj's output; Gemma:
/// post_attention_layernorm of it), or "" when it adds nothing.
std::string attention_block_to_onnx(OnnxGraph& g, const LlamaDecoderLayerImpl& layer, const std::string& prefix,
                                    const std::string& x, const std::string& mask_bias,
                                    const std::pair<std::string, std::string>& rotary) {
  const auto& attn = *layer.self_attn;
  std::string out;
  if (attn.num_heads > 0) {
    auto normed = layer.input_layernorm ? layer.input_layernorm->add_to_onnx(g, x, prefix + "input_layernorm") : x;
    out = attention_to_onnx(g, attn, prefix + "self_attn.", normed, mask_bias, rotary);
  } else if (attn.o_proj->bias.defined()) {
    out = g.weight(prefix + "self_attn.o_proj.bias", attn.o_proj->bias);
  }
  if (out.empty() || !layer.pre_feedforward_layernorm) return out;
  return layer.post_attention_layernorm->add_to_onnx(g, out, prefix + "post_attention_layernorm");
}

std::string layer_to_onnx(OnnxGraph& g, const LlamaDecoderLayerImpl& layer, const std::string& prefix,
                          const std::string& x, const std::string& mask_bias,
                          const std::pair<std::string, std::string>& rotary, const ModelConfig& c) {
  const auto attn = attention_block_to_onnx(g, layer, prefix, x, mask_bias, rotary);
  const auto h = attn.empty() ? x : g.op("Add", {x, attn});
  const bool sandwich = static_cast<bool>(layer.pre_feedforward_layernorm);
  const auto& mlp = *layer.mlp;
  if (mlp.down_proj->weight.size(1) == 0) {  // no FFN neuron left
    if (mlp.down_proj->bias.defined())
      throw Error(fmt::format("export-onnx: {}mlp has no neurons left but a down_proj bias; headprune does not write "
                              "that block as ONNX",
                              prefix));
    return h;  // it adds nothing (Gemma's post-FFN norm of a zero vector is zero)
  }
  auto normed = sandwich ? layer.pre_feedforward_layernorm->add_to_onnx(g, h, prefix + "pre_feedforward_layernorm")
                         : layer.post_attention_layernorm->add_to_onnx(g, h, prefix + "post_attention_layernorm");
  auto gate = g.activation(g.linear(normed, prefix + "mlp.gate_proj", mlp.gate_proj->weight, mlp.gate_proj->bias), c.hidden_act);
  auto up = g.linear(normed, prefix + "mlp.up_proj", mlp.up_proj->weight, mlp.up_proj->bias);
  auto down = g.linear(g.op("Mul", {gate, up}), prefix + "mlp.down_proj", mlp.down_proj->weight, mlp.down_proj->bias);
  if (sandwich) down = layer.post_feedforward_layernorm->add_to_onnx(g, down, prefix + "post_feedforward_layernorm");
  return g.op("Add", {h, down});
}

}  // namespace

OnnxModelOutputs LlamaModel::add_to_onnx(OnnxGraph& g) const {
  for (const char* name : {"input_ids", "attention_mask"}) g.int64_input(name, {"batch_size", "sequence_length"});
  const auto embed = g.weight("model.embed_tokens.weight", embed_tokens->weight);
  auto x = g.op("Gather", {embed, "input_ids"});
  if (config_.embed_scale != 1.0) x = g.op("Mul", {x, g.float_constant(static_cast<float>(config_.embed_scale))});
  if (embed_norm) x = embed_norm->add_to_onnx(g, x, "model.embed_norm");
  const auto seq_len = g.sequence_length("input_ids");
  std::map<int64_t, std::string> mask_biases;  // by window (0: none)
  std::map<double, std::pair<std::string, std::string>> rotaries;  // by RoPE base
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto window = config_.window_of(static_cast<int64_t>(l));
    if (!mask_biases.count(window))
      mask_biases[window] = attention_mask_bias(g, seq_len, window, config_.bidirectional);
    const auto theta = config_.rope_theta_of(static_cast<int64_t>(l));
    if (!rotaries.count(theta))
      rotaries[theta] = rotary_to_onnx(g, seq_len, config_.head_dim, theta, config_.rope_scaling,
                                       theta == config_.rope_theta ? "rotary.inv_freq" : "rotary.local_inv_freq");
    x = layer_to_onnx(g, *layers[l], "model.layers." + std::to_string(l) + ".", x, mask_biases[window],
                      rotaries[theta], config_);
  }
  x = norm->add_to_onnx(g, x, "model.norm");
  if (!config_.family().has_lm_head()) return {x, ""};
  if (lm_head) return {x, g.linear(x, "lm_head", lm_head->weight, lm_head->bias)};
  // A tied LM head reads the embedding matrix (no second copy).
  const auto embed_t = g.op("Transpose", {embed}, {{"perm", std::vector<int64_t>{1, 0}}});
  return {x, g.op("MatMul", {x, embed_t})};
}

}  // namespace headprune::models
