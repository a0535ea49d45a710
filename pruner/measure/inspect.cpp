#include "pruner/measure/inspect.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/flops.h"
#include "models/head_costs.h"
#include "models/kv_cache.h"
#include "models/model_family.h"
#include "models/model_size.h"
#include "pruner/format.h"

namespace headprune::pruner {

ModelSummary summarize(const models::AttentionModel& model, int64_t seq_len) {
  const auto& c = model.config();
  ModelSummary s;
  s.model_type = c.model_type;
  s.architecture = c.family().description(c);
  s.num_hidden_layers = c.num_hidden_layers;
  s.num_attention_heads = c.num_attention_heads;
  s.head_dim = c.head_dim;
  s.hidden_size = c.hidden_size;
  s.heads_per_layer = c.heads_per_layer();
  s.intermediate_size = c.intermediate_size;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) s.intermediate_sizes.push_back(c.ffn_width(l));
  s.original_num_attention_heads = c.original_num_attention_heads;
  for (const auto& kv : c.kept_kv_heads())
    s.num_key_value_heads_per_layer.push_back(static_cast<int64_t>(kv.size()));
  s.kept_heads = c.kept_heads;
  if (c.family().has_lm_head()) s.kv_cache_values_per_token_per_layer = models::kv_values_per_token_per_layer(c);
  s.parameters = models::parameter_count(model);
  s.attention_parameters = model.attention_parameter_count();
  s.ffn_parameters = models::ffn_parameters(c);
  s.seq_len = seq_len;
  s.flops_per_token = models::forward_flops_per_token(c, seq_len);
  s.attention_flops_per_token = models::attention_flops_per_token(c, seq_len);
  s.ffn_flops_per_token = models::ffn_flops_per_token(c);
  return s;
}

ModelSummary summarize(const models::Checkpoint& ckpt, int64_t seq_len) {
  auto s = summarize(*ckpt.model, seq_len);
  s.weights_file_bytes = models::weights_file_bytes(ckpt.dir);
  s.pooling = ckpt.pooling.from_sentence_transformers ? ckpt.pooling.describe() : "";
  s.max_seq_length = ckpt.max_seq_length;
  return s;
}

nlohmann::json to_json(const ModelSummary& s) {
  return {{"model_type", s.model_type},
          {"architecture", s.architecture},
          {"num_hidden_layers", s.num_hidden_layers},
          {"num_attention_heads", s.num_attention_heads},
          {"head_dim", s.head_dim},
          {"hidden_size", s.hidden_size},
          {"heads_per_layer", s.heads_per_layer},
          {"heads", sum(s.heads_per_layer)},
          {"intermediate_size", s.intermediate_size},
          {"intermediate_sizes", s.intermediate_sizes},
          {"original_num_attention_heads", s.original_num_attention_heads},
          {"num_key_value_heads_per_layer", s.num_key_value_heads_per_layer},
          {"kept_heads", s.kept_heads},
          {"kv_cache_values_per_token_per_layer", s.kv_cache_values_per_token_per_layer},
          {"kv_cache_values_per_token", sum(s.kv_cache_values_per_token_per_layer)},
          {"parameters", s.parameters},
          {"attention_parameters", s.attention_parameters},
          {"ffn_parameters", s.ffn_parameters},
          {"seq_len", s.seq_len},
          {"flops_per_token", s.flops_per_token},
          {"attention_flops_per_token", s.attention_flops_per_token},
          {"ffn_flops_per_token", s.ffn_flops_per_token},
          {"weights_file_bytes", s.weights_file_bytes},
          {"pooling", s.pooling},
          {"max_seq_length", s.max_seq_length}};
}

namespace {

double share(double part, double whole) { return 100.0 * part / std::max(whole, 1.0); }

}  // namespace

std::string composition(const ModelSummary& s) {
  const auto params = static_cast<double>(s.parameters);
  return fmt::format("{} heads, {} FFN neurons; {} parameters (attention {:.1f}%, FFN {:.1f}%); {} FLOPs/token at "
                     "seq {} (attention {:.1f}%, FFN {:.1f}%)",
                     sum(s.heads_per_layer), sum(s.intermediate_sizes), human_count(s.parameters),
                     share(static_cast<double>(s.attention_parameters), params),
                     share(static_cast<double>(s.ffn_parameters), params), human_count(s.flops_per_token), s.seq_len,
                     share(s.attention_flops_per_token, s.flops_per_token),
                     share(s.ffn_flops_per_token, s.flops_per_token));
}

std::string to_text(const ModelSummary& s) {
  std::string out;
  out += fmt::format("model_type            {}\n", s.model_type);
  out += fmt::format("architecture          {}\n", s.architecture);
  out += fmt::format("layers                {}\n", s.num_hidden_layers);
  out += fmt::format("hidden_size           {}\n", s.hidden_size);
  out += fmt::format("heads per layer       {}  (total {} of {}; head_dim {})\n",
                     fmt::join(s.heads_per_layer, " "), sum(s.heads_per_layer),
                     s.original_num_attention_heads * s.num_hidden_layers, s.head_dim);
  out += fmt::format("KV heads per layer    {}\n", fmt::join(s.num_key_value_heads_per_layer, " "));
  out += fmt::format("FFN width per layer   {}  (total {} of {})\n", fmt::join(s.intermediate_sizes, " "),
                     sum(s.intermediate_sizes), s.intermediate_size * s.num_hidden_layers);
  if (!s.kv_cache_values_per_token_per_layer.empty()) {
    const auto values = sum(s.kv_cache_values_per_token_per_layer);
    const auto& per_layer = s.kv_cache_values_per_token_per_layer;
    const bool uniform = std::all_of(per_layer.begin(), per_layer.end(), [&](int64_t v) { return v == per_layer[0]; });
    out += fmt::format("KV cache per token    {} at F16, {} at F32 ({} numbers: {})\n",
                       human_bytes(static_cast<std::uintmax_t>(2 * values)),
                       human_bytes(static_cast<std::uintmax_t>(4 * values)), values,
                       uniform ? fmt::format("{} in each layer", per_layer[0])
                               : fmt::format("per layer {}", fmt::join(per_layer, " ")));
  }
  out += fmt::format("parameters            {} ({})\n", s.parameters, human_count(s.parameters));
  const auto params = static_cast<double>(s.parameters);
  const auto attention = static_cast<double>(s.attention_parameters), ffn = static_cast<double>(s.ffn_parameters);
  out += fmt::format("  attention           {} ({:.1f}%)\n", s.attention_parameters, share(attention, params));
  out += fmt::format("  FFN                 {} ({:.1f}%)\n", s.ffn_parameters, share(ffn, params));
  out += fmt::format("  embeddings, rest    {} ({:.1f}%)\n", s.parameters - s.attention_parameters - s.ffn_parameters,
                     share(params - attention - ffn, params));
  const double rest = s.flops_per_token - s.attention_flops_per_token - s.ffn_flops_per_token;
  out += fmt::format("FLOPs per token       {} at seq {} (attention {:.1f}%, FFN {:.1f}%{})\n",
                     human_count(s.flops_per_token), s.seq_len, share(s.attention_flops_per_token, s.flops_per_token),
                     share(s.ffn_flops_per_token, s.flops_per_token),
                     rest > 0 ? fmt::format(", LM head {:.1f}%", share(rest, s.flops_per_token)) : "");
  out += fmt::format("weights file          {}\n", human_bytes(s.weights_file_bytes));
  if (!s.pooling.empty()) out += fmt::format("sentence pooling      {}\n", s.pooling);
  out += fmt::format("max sequence length   {}\n", s.max_seq_length);
  return out;
}

}  // namespace headprune::pruner
