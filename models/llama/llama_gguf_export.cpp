#include "models/llama/llama_gguf_export.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/llama/llama_gguf.h"
#include "models/llama/llama_gguf_names.h"
#include "models/llama/llama_model.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace headprune::models::llama {
namespace {

/// The ggml type `t` is written as: 1-D tensors (norm weights) F32, matrices as `type` says.
GgmlType matrix_type(GgufExportType type, const torch::Tensor& t) {
  if (t.dim() < 2) return GgmlType::F32;
  switch (type) {
    case GgufExportType::kF32: return GgmlType::F32;
    case GgufExportType::kF16: return GgmlType::F16;
    case GgufExportType::kQ8_0: return t.size(-1) % 32 == 0 ? GgmlType::Q8_0 : GgmlType::F16;
  }
  return GgmlType::F32;
}

/// A pre_tokenizer's JSON without ByteLevel's `trim_offsets`, which moves offsets only, never
/// ids (Qwen2's tokenizer.json says false, the ByteLevel default true).
nlohmann::json without_trim_offsets(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("trim_offsets");
    for (auto& [key, value] : j.items()) value = without_trim_offsets(value);
  } else if (j.is_array()) {
    for (auto& value : j) value = without_trim_offsets(value);
  }
  return j;
}

/// llama.cpp's pre-tokenizer name of `tok`: the known name whose HF pipeline (as
/// BpeTokenizer::from_gguf builds it) serialises to the same pre_tokenizer (offsets aside),
/// normalizer and ignore_merges as `tok`.
std::string pre_name(const nlohmann::json& tokenizer_json) {
  for (const char* name : {"smollm", "llama-bpe", "qwen2", "gpt-2"}) {
    GgufVocabulary probe;
    probe.model = "gpt2";
    probe.pre = name;
    probe.tokens = {"a"};
    const auto j = BpeTokenizer::from_gguf(probe).to_tokenizer_json();
    if (without_trim_offsets(j["pre_tokenizer"]) == without_trim_offsets(tokenizer_json["pre_tokenizer"]) &&
        j["normalizer"] == tokenizer_json["normalizer"] &&
        j["model"].value("ignore_merges", false) == tokenizer_json["model"].value("ignore_merges", false))
      return name;
  }
  throw Error(fmt::format("export-gguf: the tokenizer's pre-tokenizer {} is none of those llama.cpp names that "
                          "headprune knows (smollm, llama-bpe, qwen2, gpt-2); llama.cpp would split text "
                          "differently, so no GGUF is written",
                          tokenizer_json["pre_tokenizer"].dump()));
}

/// llama.cpp's tokenizer.ggml.* keys (llama-vocab.cpp, LLAMA_VOCAB_TYPE_BPE) for `tok`, with the
/// token list padded to the model's `n_vocab` embedding rows by "[PADi]" tokens of type 5
/// (unused), as convert_hf_to_gguf.py pads.
void add_byte_level_tokenizer(GgufWriter& w, const BpeTokenizer& tok, const std::string& chat_template,
                              int64_t n_vocab) {
  const auto j = tok.to_tokenizer_json();
  if (tok.vocab_size() > n_vocab)
    throw Error(fmt::format("export-gguf: the tokenizer has {} tokens but the embedding only {} rows; llama.cpp "
                            "needs one row per token", tok.vocab_size(), n_vocab));
  std::vector<std::string> tokens(static_cast<std::size_t>(n_vocab));
  std::vector<int64_t> types(static_cast<std::size_t>(n_vocab), 0);
  for (const auto& [text, id] : j["model"]["vocab"].items()) {
    tokens.at(id.get<std::size_t>()) = text;
    types.at(id.get<std::size_t>()) = 1;  // normal
  }
  for (const auto& added : j["added_tokens"]) {
    const auto id = added["id"].get<std::size_t>();
    tokens.at(id) = added["content"].get<std::string>();
    types.at(id) = added.value("special", false) ? 3 : 4;  // control : user-defined
  }
  for (std::size_t id = 0; id < tokens.size(); ++id)
    if (types[id] == 0) {
      tokens[id] = fmt::format("[PAD{}]", id);
      types[id] = 5;  // unused
    }
  std::vector<std::string> merges;
  for (const auto& m : j["model"]["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
  // What encode(add_special_tokens) puts around the text must be one BOS before / one EOS after.
  const auto plain = tok.encode_text("a", false);
  const auto full = tok.encode_text("a", true);
  const auto at = std::search(full.begin(), full.end(), plain.begin(), plain.end());
  const std::vector<int64_t> prefix(full.begin(), at), suffix(at + static_cast<std::ptrdiff_t>(plain.size()), full.end());
  const bool add_bos = !prefix.empty(), add_eos = !suffix.empty();
  if (prefix.size() > 1 || suffix.size() > 1 || (add_bos && prefix[0] != tok.bos_id()) ||
      (add_eos && suffix[0] != tok.eos_id()))
    throw Error(fmt::format("export-gguf: the tokenizer adds [{}] before and [{}] after the text; llama.cpp can only "
                            "add its BOS before and its EOS after", fmt::join(prefix, ", "), fmt::join(suffix, ", ")));
  w.add("tokenizer.ggml.model", gguf_string("gpt2"));
  w.add("tokenizer.ggml.pre", gguf_string(pre_name(j)));
  w.add("tokenizer.ggml.tokens", gguf_string_array(tokens));
  w.add("tokenizer.ggml.token_type", gguf_i32_array(types));
  w.add("tokenizer.ggml.merges", gguf_string_array(merges));
  const auto config = tok.to_tokenizer_config_json();
  const auto id_of = [&](const char* key) -> std::optional<int64_t> {
    if (!config.contains(key) || !config[key].is_string()) return std::nullopt;
    return tok.token_to_id(config[key].get<std::string>());
  };
  for (auto [key, id] : {std::pair{"bos_token_id", tok.bos_id()}, std::pair{"eos_token_id", tok.eos_id()},
                         std::pair{"unknown_token_id", id_of("unk_token")},
                         std::pair{"padding_token_id", id_of("pad_token")}})
    if (id) w.add(fmt::format("tokenizer.ggml.{}", key), gguf_u32(static_cast<uint32_t>(*id)));
  w.add("tokenizer.ggml.add_bos_token", gguf_bool(add_bos));
  w.add("tokenizer.ggml.add_eos_token", gguf_bool(add_eos));
  if (!chat_template.empty()) w.add("tokenizer.chat_template", gguf_string(chat_template));
}

/// llama.cpp's tokenizer.ggml.* keys of a Gemma SentencePiece vocabulary (model "llama":
/// tokens, scores, token types; no merges), as gemma_gguf_vocabulary recovers them.
void add_sentencepiece_tokenizer(GgufWriter& w, const BpeTokenizer& tok, const std::string& chat_template,
                                 int64_t n_vocab) {
  const auto v = gemma_gguf_vocabulary(tok);
  if (static_cast<int64_t>(v.tokens.size()) != n_vocab)
    throw Error(fmt::format("export-gguf: the tokenizer has {} tokens but the embedding {} rows; llama.cpp's "
                            "SentencePiece vocabulary needs one row per token",
                            v.tokens.size(), n_vocab));
  w.add("tokenizer.ggml.model", gguf_string(v.model));
  w.add("tokenizer.ggml.pre", gguf_string(v.pre));
  w.add("tokenizer.ggml.tokens", gguf_string_array(v.tokens));
  w.add("tokenizer.ggml.scores", gguf_f32_array(v.scores));
  w.add("tokenizer.ggml.token_type", gguf_i32_array(std::vector<int64_t>(v.token_types.begin(), v.token_types.end())));
  for (auto [key, id] : {std::pair{"bos_token_id", v.bos_id}, std::pair{"eos_token_id", v.eos_id},
                         std::pair{"unknown_token_id", v.unk_id}, std::pair{"padding_token_id", v.pad_id}})
    if (id >= 0) w.add(fmt::format("tokenizer.ggml.{}", key), gguf_u32(static_cast<uint32_t>(id)));
  w.add("tokenizer.ggml.add_bos_token", gguf_bool(v.add_bos));
  w.add("tokenizer.ggml.add_eos_token", gguf_bool(v.add_eos));
  w.add("tokenizer.ggml.add_space_prefix", gguf_bool(false));
  if (!chat_template.empty()) w.add("tokenizer.chat_template", gguf_string(chat_template));
}

}  // namespace

GgufLayerShape llama_cpp_layer_heads(const std::vector<int64_t>& kv_of_query) {
  GgufLayerShape out;
  out.n_head = static_cast<int64_t>(kv_of_query.size());
  if (out.n_head == 0) return out;
  for (int64_t g = out.n_head; g >= 1; --g) {
    if (out.n_head % g != 0) continue;
    bool blocks = true;
    for (int64_t i = 0; i < out.n_head && blocks; ++i) blocks = kv_of_query[i] == kv_of_query[i / g * g];
    if (!blocks) continue;
    out.n_head_kv = out.n_head / g;
    for (int64_t k = 0; k < out.n_head_kv; ++k) out.kv_source.push_back(kv_of_query[k * g]);
    return out;
  }
  return out;  // unreachable: g = 1 always forms blocks
}

torch::Tensor interleave_rotary_rows(const torch::Tensor& w, int64_t n_heads, int64_t head_dim) {
  return w.reshape({n_heads, 2, head_dim / 2, -1}).transpose(1, 2).reshape(w.sizes());
}

namespace {

/// The FFN width llama.cpp's file holds for a layer of `width` neurons: an emptied FFN is written
/// as one zero neuron (gate, up and down weights 0: silu(0) · 0 = 0, exact), since deci treats
/// feed_forward_length 0 as "skip the rest of the layer", dropping its attention output too
/// (llama.cpp src/models/deci.cpp, `if (n_ff == 0) continue;` before `inpL = cur`).
int64_t llama_cpp_ffn_width(int64_t width) { return std::max<int64_t>(width, 1); }

/// The layers' llama.cpp head layout and FFN widths, the architecture they need and the warnings
/// they bring: `layout`'s when every layer has the same heads and FFN width, else `deci` where the
/// layout allows it.
void plan_layers(const LlamaModel& model, const GgufDecoderLayout& layout, GgufExport& out) {
  const auto& c = model.config();
  for (const auto& layer : model.layers) out.layers.push_back(llama_cpp_layer_heads(layer->self_attn->kv_of_query));
  if (out.layers.at(0).n_head == 0)
    throw Error("export-gguf: layer 0 has no attention heads left; llama.cpp (deci) takes the head size from layer "
                "0's head count and would build a broken model, so no GGUF is written (keep a head in layer 0)");
  bool uniform = true;
  for (std::size_t l = 0; l < out.layers.size(); ++l) {
    auto& h = out.layers[l];
    h.n_ff = llama_cpp_ffn_width(c.ffn_width(static_cast<int64_t>(l)));
    uniform = uniform && h.n_head == out.layers[0].n_head && h.n_head_kv == out.layers[0].n_head_kv;
    const auto kv_before = model.layers[l]->self_attn->num_kv_heads;
    if (h.n_head_kv > kv_before)
      out.warnings.push_back(fmt::format("layer {}: its query heads use their KV heads unevenly, so {} KV heads are "
                                         "written as {} copies (exact; a larger KV cache in llama.cpp)",
                                         l, kv_before, h.n_head_kv));
    if (c.ffn_width(static_cast<int64_t>(l)) == 0)
      out.warnings.push_back(fmt::format("layer {}: its emptied FFN is written as one zero neuron, since llama.cpp's "
                                         "deci would skip the whole layer at feed_forward_length 0 (exact)",
                                         l));
  }
  if (!uniform && !layout.uneven_as_deci)
    throw Error(fmt::format("export-gguf: the layers keep different query/KV head counts, which llama.cpp's {} "
                            "architecture cannot hold (one attention.head_count for all layers); keep the same heads "
                            "per layer (--uniform-layers) for a GGUF, or use the HF folder or ONNX",
                            layout.architecture));
  if (!c.plain_ffn() && !layout.uneven_as_deci)
    throw Error(fmt::format("export-gguf: the layers' FFN widths are {}, which llama.cpp's {} architecture cannot "
                            "hold (one feed_forward_length for all layers); use the HF folder or ONNX for this model",
                            fmt::join(c.intermediate_sizes, ", "), layout.architecture));
  out.per_layer_heads = !uniform;
  out.per_layer_ffn = !c.plain_ffn();
  out.architecture = out.per_layer_heads || out.per_layer_ffn ? "deci" : layout.architecture;
}

/// general.* and the architecture's keys.
void add_model_metadata(const ModelConfig& c, int64_t n_vocab, GgufExportType type, const std::string& name,
                        const GgufDecoderLayout& layout, GgufExport& out) {
  const auto& arch = out.architecture;
  const bool uniform = !out.per_layer_heads;
  auto& w = out.writer;
  const auto u32 = [](int64_t v) { return gguf_u32(static_cast<uint32_t>(v)); };
  const auto key = [&](const char* k) { return fmt::format("{}.{}", arch, k); };
  w.add("general.architecture", gguf_string(arch));
  w.add("general.name", gguf_string(name));
  w.add("general.file_type", gguf_u32(gguf_file_type(type)));
  w.add(key("vocab_size"), u32(n_vocab));
  w.add(key("context_length"), u32(c.max_position_embeddings));
  w.add(key("embedding_length"), u32(c.hidden_size));
  if (out.per_layer_ffn) {
    std::vector<int64_t> widths;
    for (const auto& h : out.layers) widths.push_back(h.n_ff);
    w.add(key("feed_forward_length"), gguf_i32_array(widths));
  } else {
    w.add(key("feed_forward_length"), u32(out.layers[0].n_ff));
  }
  w.add(key("block_count"), u32(c.num_hidden_layers));
  if (uniform) {
    w.add(key("attention.head_count"), u32(out.layers[0].n_head));
    w.add(key("attention.head_count_kv"), u32(out.layers[0].n_head_kv));
  } else {
    std::vector<int64_t> heads, kv;
    for (const auto& h : out.layers) {
      heads.push_back(h.n_head);
      kv.push_back(h.n_head_kv);
    }
    w.add(key("attention.head_count"), gguf_i32_array(heads));
    w.add(key("attention.head_count_kv"), gguf_i32_array(kv));
  }
  w.add(key("rope.freq_base"), gguf_f32(static_cast<float>(c.rope_theta)));
  w.add(key("attention.layer_norm_rms_epsilon"), gguf_f32(static_cast<float>(c.rms_norm_eps)));
  w.add(key("rope.dimension_count"), u32(c.head_dim));
  // llama.cpp's default head size is embedding_length / head_count (of layer 0): say it whenever
  // pruning (or the model) makes that wrong.
  if (!uniform || out.layers[0].n_head * c.head_dim != c.hidden_size) {
    w.add(key("attention.key_length"), u32(c.head_dim));
    w.add(key("attention.value_length"), u32(c.head_dim));
  }
  if (layout.extra_metadata) layout.extra_metadata(c, w);
}

/// Whether an HF tensor name is a norm weight (input_layernorm, q_norm, model.norm, ...).
bool is_norm(const std::string& hf_name) {
  const std::string suffix = "norm.weight";
  return hf_name.size() >= suffix.size() && hf_name.compare(hf_name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Layer l's `kind` ("weight" / "bias") of HF module `module` as llama.cpp holds it: K/V heads
/// copied per the head layout `h`, q/k rows interleaved where the layout permutes, norms as
/// 1 + w where it says so; a fused module (layout.fused_modules) as its parts' rows in order.
/// Undefined when the model has no such tensor (a bias it does not have).
torch::Tensor layer_tensor(const TensorMap& weights, const GgufDecoderLayout& layout, const GgufLayerShape& h,
                           int64_t l, int64_t hd, const std::string& module, const std::string& kind) {
  if (const auto fused = layout.fused_modules.find(module); fused != layout.fused_modules.end()) {
    std::vector<torch::Tensor> parts;
    for (const auto& part : fused->second) parts.push_back(layer_tensor(weights, layout, h, l, hd, part, kind));
    for (const auto& t : parts)
      if (!t.defined()) return {};
    return torch::cat(parts, 0);
  }
  const auto name = fmt::format("model.layers.{}.{}.{}", l, module, kind);
  const auto it = weights.find(name);
  if (it == weights.end()) return {};
  auto t = layout.norms_hold_one_plus_weight && is_norm(name) ? it->second + 1.0F : it->second;
  const bool key = module == "self_attn.k_proj";
  if (key || module == "self_attn.v_proj") {
    const auto src = torch::tensor(h.kv_source, torch::kLong);
    const auto cols = t.dim() == 2 ? t.size(1) : 1;
    t = t.reshape({-1, hd, cols}).index_select(0, src).reshape({h.n_head_kv * hd, cols});
    if (kind == "bias") t = t.squeeze(1);
  }
  if (layout.permute_qk && (key || module == "self_attn.q_proj"))
    t = interleave_rotary_rows(t, key ? h.n_head_kv : h.n_head, hd);
  return t;
}

/// Layer tensor `t` of GGUF part `part` at llama.cpp's FFN width `n_ff` (llama_cpp_ffn_width): an
/// emptied FFN's gate / up rows and biases and its down columns as zeros; anything else unchanged.
torch::Tensor widen_empty_ffn(const torch::Tensor& t, const std::string& part, int64_t n_ff) {
  const int64_t dim = part == "ffn_down" ? 1 : 0;
  if (!t.defined() || part.rfind("ffn_", 0) != 0 || part == "ffn_norm" || t.dim() <= dim || t.size(dim) != 0) return t;
  auto sizes = t.sizes().vec();
  sizes[static_cast<std::size_t>(dim)] = n_ff;
  return torch::zeros(sizes, t.options());
}

/// The tensors, by the layout's name table (layer_tensor for each layer's weights and biases).
/// @throws headprune::Error on a bias the layout does not write.
void add_tensors(const LlamaModel& model, const GgufDecoderLayout& layout, GgufExportType type, GgufExport& out) {
  const auto& c = model.config();
  const auto weights = state_dict(model);
  const auto put = [&](const std::string& gguf_name, const torch::Tensor& t) {
    out.writer.add_tensor(gguf_name, t, matrix_type(type, t));
  };
  const auto global = [&](std::size_t i) {
    const auto& [gguf, hf] = kGgufGlobalNames.at(i);
    const auto& t = weights.at(hf);
    put(gguf, layout.norms_hold_one_plus_weight && is_norm(hf) ? t + 1.0F : t);
  };
  global(0);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const auto& h = out.layers[static_cast<std::size_t>(l)];
    for (const auto& [p, module] : layout.layer_names) {
      if (p.rfind("attn_", 0) == 0 && h.n_head == 0) continue;  // deci: an attention-free layer has none
      put(fmt::format("blk.{}.{}.weight", l, p),
          widen_empty_ffn(layer_tensor(weights, layout, h, l, c.head_dim, module, "weight"), p, h.n_ff));
      const auto bias = widen_empty_ffn(layer_tensor(weights, layout, h, l, c.head_dim, module, "bias"), p, h.n_ff);
      if (!bias.defined()) continue;
      if (!layout.bias_parts.count(p))
        throw Error(fmt::format("export-gguf: layer {}'s {} has a bias, which llama.cpp's {} does not take", l,
                                module, layout.architecture));
      put(fmt::format("blk.{}.{}.bias", l, p), bias);
    }
  }
  global(1);
  if (!c.tie_word_embeddings) global(2);
}

}  // namespace

void check_decoder_gguf_exportable(const Checkpoint& checkpoint, const std::string& architecture) {
  if (!dynamic_cast<const LlamaModel*>(checkpoint.model.get()))
    throw Error(fmt::format("export-gguf: {} is a '{}' model; GGUF export writes LLaMA-style decoders only",
                            checkpoint.dir.string(), checkpoint.model->config().model_type));
  const auto& c = checkpoint.model->config();
  if (c.has_effective_sliding_window())
    throw Error(fmt::format("export-gguf: {} attends through a sliding window of {} positions (shorter "
                            "than max_position_embeddings {}); llama.cpp's {} architecture attends to "
                            "every position, so the file would compute differently past {} tokens",
                            checkpoint.dir.string(), c.sliding_window, c.max_position_embeddings, architecture,
                            c.sliding_window));
  if (c.hidden_act != "silu")
    throw Error(fmt::format("export-gguf: {} uses hidden_act '{}'; llama.cpp's {} runs silu only",
                            checkpoint.dir.string(), c.hidden_act, architecture));
  if (c.rope_scaling.llama3)
    throw Error(fmt::format("export-gguf: {} scales its RoPE frequencies as Llama 3 does (rope_type \"llama3\"), "
                            "which llama.cpp reads from a rope_freqs tensor that headprune does not write; "
                            "export an HF folder (apply) and convert it with llama.cpp's convert_hf_to_gguf.py",
                            checkpoint.dir.string()));
}

void check_llama_gguf_exportable(const Checkpoint& checkpoint) {
  // LlamaModel computes other families too: what llama.cpp's `llama` cannot run is refused by
  // what it is (Mistral without an effective window is written as `llama`, as llama.cpp's
  // converter does; biases are llama.cpp's optional bias tensors).
  check_decoder_gguf_exportable(checkpoint, "llama");
  if (checkpoint.model->config().qk_norm)
    throw Error(fmt::format("export-gguf: {} normalises each query/key head (q_norm / k_norm), which "
                            "llama.cpp's llama architecture does not", checkpoint.dir.string()));
}

bool heads_fill_width(const ModelConfig& c) {
  for (const auto& kept : c.kept_heads)
    if (static_cast<int64_t>(kept.size()) * c.head_dim != c.hidden_size) return false;
  return true;
}

GgufExport build_fitting_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name,
                              const GgufDecoderLayout& own) {
  if (heads_fill_width(checkpoint.model->config())) {
    check_decoder_gguf_exportable(checkpoint, own.architecture);
    return build_decoder_gguf(checkpoint, type, name, own);
  }
  auto out = build_llama_gguf(checkpoint, type, name);
  out.warnings.push_back(fmt::format("written as llama.cpp's {} architecture, which computes the same: its {} "
                                     "needs query heads × head_dim = hidden_size in every layer, which the "
                                     "pruned layers no longer have",
                                     out.architecture, own.architecture));
  return out;
}

GgufExport build_llama_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name) {
  check_llama_gguf_exportable(checkpoint);
  return build_decoder_gguf(checkpoint, type, name, llama_layout());
}

GgufExport build_decoder_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name,
                              const GgufDecoderLayout& layout) {
  const auto* model = dynamic_cast<const LlamaModel*>(checkpoint.model.get());
  if (!model) throw Error(fmt::format("export-gguf: {} is not a LLaMA-style decoder", checkpoint.dir.string()));
  const auto& c = model->config();
  GgufExport out;
  plan_layers(*model, layout, out);
  const auto n_vocab = model->embed_tokens->weight.size(0);
  add_model_metadata(c, n_vocab, type, name, layout, out);
  const auto tok = std::dynamic_pointer_cast<BpeTokenizer>(checkpoint.tokenizer);
  if (tok && tok->decoder() == BpeDecoder::kByteFallbackStrip)
    throw Error("export-gguf: the tokenizer is LLaMA-style SentencePiece (Prepend / Metaspace, byte fallback, Strip "
                "decoder: LLaMA 2, Mistral, Phi-3), whose llama.cpp vocabulary headprune does not write yet; no GGUF "
                "is written (the HF folder and ONNX exports carry it)");
  if (tok) {
    (tok->decoder() == BpeDecoder::kByteFallback ? add_sentencepiece_tokenizer : add_byte_level_tokenizer)(
        out.writer, *tok, checkpoint.chat_template, n_vocab);
    out.has_tokenizer = true;
  } else {
    out.warnings.push_back(checkpoint.tokenizer
                               ? "the checkpoint's tokenizer is not BPE: no tokenizer is written, and "
                                 "llama.cpp cannot run a GGUF file without one"
                               : "the checkpoint has no tokenizer: none is written, and llama.cpp cannot run a GGUF "
                                 "file without one");
  }
  add_tensors(*model, layout, type, out);
  return out;
}

GgufExport DecoderGgufCodec::build(const Checkpoint& checkpoint, GgufExportType type, const std::string& name) const {
  check_(checkpoint);
  return fitting_ ? build_fitting_gguf(checkpoint, type, name, layout_)
                  : build_decoder_gguf(checkpoint, type, name, layout_);
}

}  // namespace headprune::models::llama
