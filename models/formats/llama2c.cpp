#include "models/formats/llama2c.h"

#include <cstring>
#include <fstream>
#include <functional>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/input_file.h"

namespace headprune::models {

torch::Tensor permute_rotary_rows(const torch::Tensor& w, int64_t n_heads, int64_t head_dim) {
  // [n, d/2, 2, in] -> [n, 2, d/2, in]: per head rows 0,2,4,... then 1,3,5,...
  return w.view({n_heads, head_dim / 2, 2, w.size(1)}).transpose(1, 2).reshape(w.sizes());
}

Llama2cCheckpoint read_llama2c(const std::filesystem::path& file) {
  auto in = open_input_file(file, "llama2.c checkpoint");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto size = static_cast<int64_t>(bytes.size());
  Llama2cCheckpoint ckpt;
  ckpt.header = parse_llama2c_header(bytes.data(), bytes.size(), size, file.string());
  const auto& h = ckpt.header;

  const int64_t L = h.n_layers, d = h.dim, hd = h.hidden_dim, V = h.vocab(), n = h.n_heads,
                nkv = h.n_kv_heads, head = h.head_dim(), kv = nkv * head;
  int64_t offset = 28;
  auto next = [&](std::vector<int64_t> shape) {
    int64_t count = 1;
    for (auto s : shape) count *= s;
    auto t = torch::empty(shape, torch::kFloat);
    std::memcpy(t.data_ptr<float>(), bytes.data() + offset, count * 4);
    offset += count * 4;
    return t;
  };
  auto& w = ckpt.weights;
  auto layer_key = [](int64_t l, const char* name) {
    return fmt::format("model.layers.{}.{}.weight", l, name);
  };
  auto per_layer = [&](const char* name, std::vector<int64_t> shape,
                       const std::function<torch::Tensor(torch::Tensor)>& fix) {
    shape.insert(shape.begin(), L);
    auto all = next(shape);
    for (int64_t l = 0; l < L; ++l) w[layer_key(l, name)] = fix(all[l].clone());
  };
  auto same = [](torch::Tensor t) { return t; };
  w["model.embed_tokens.weight"] = next({V, d});
  per_layer("input_layernorm", {d}, same);
  per_layer("self_attn.q_proj", {d, d}, [&](torch::Tensor t) { return permute_rotary_rows(t, n, head); });
  per_layer("self_attn.k_proj", {kv, d}, [&](torch::Tensor t) { return permute_rotary_rows(t, nkv, head); });
  per_layer("self_attn.v_proj", {kv, d}, same);
  per_layer("self_attn.o_proj", {d, d}, same);
  per_layer("post_attention_layernorm", {d}, same);
  per_layer("mlp.gate_proj", {hd, d}, same);  // w1
  per_layer("mlp.down_proj", {d, hd}, same);  // w2
  per_layer("mlp.up_proj", {hd, d}, same);    // w3
  w["model.norm.weight"] = next({d});
  offset += int64_t{h.seq_len} * head * 4;  // freq_cis_real, freq_cis_imag: recomputed by RoPE
  if (!h.shared_classifier()) w["lm_head.weight"] = next({V, d});

  ckpt.config_json = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"vocab_size", V},
                      {"hidden_size", d},
                      {"intermediate_size", hd},
                      {"num_hidden_layers", L},
                      {"num_attention_heads", n},
                      {"num_key_value_heads", nkv},
                      {"head_dim", head},
                      {"max_position_embeddings", h.seq_len},
                      {"hidden_act", "silu"},
                      {"rms_norm_eps", 1e-5},
                      {"rope_theta", 10000.0},
                      {"tie_word_embeddings", h.shared_classifier()},
                      {"attention_bias", false},
                      {"mlp_bias", false},
                      {"bos_token_id", 1},
                      {"eos_token_id", 2},
                      {"torch_dtype", "float32"}};
  return ckpt;
}

}  // namespace headprune::models
