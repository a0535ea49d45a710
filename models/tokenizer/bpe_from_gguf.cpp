// ByteLevelBpeTokenizer from a GGUF file's tokenizer metadata (llama.cpp `tokenizer.ggml.*`).
#include <fmt/format.h>

#include "models/errors.h"
#include "models/tokenizer/byte_level_bpe.h"

namespace headprune::models {
namespace bpe_from_gguf_impl {

struct PrePipeline {
  std::vector<PreTokenizerStep> steps;
  bool nfc = false;
  bool ignore_merges = false;
};

/// The upstream HF pipeline of llama.cpp's pre-tokenizer name (llama-vocab.cpp, llama_vocab::impl::load).
PrePipeline pipeline_of(const std::string& pre) {
  if (pre == "gpt-2" || pre == "gpt2") return {{PreTokenizerStep::byte_level(false, true)}, false, false};
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3")
    return {{PreTokenizerStep::split(kLlama3Pattern), PreTokenizerStep::byte_level(false, false)}, false, true};
  if (pre == "qwen2")
    return {{PreTokenizerStep::split(kQwen2Pattern), PreTokenizerStep::byte_level(false, false)}, true, false};
  if (pre == "smollm")
    return {{PreTokenizerStep::digits(true), PreTokenizerStep::byte_level(false, true)}, false, false};
  throw Error(fmt::format("GGUF tokenizer.ggml.pre '{}' is not supported (headprune knows gpt-2, llama-bpe, "
                          "qwen2, smollm)",
                          pre.empty() ? "(missing: llama.cpp's 'default')" : pre));
}

std::optional<int64_t> checked_id(int64_t id, std::size_t size, const char* key) {
  if (id < 0) return std::nullopt;
  if (static_cast<std::size_t>(id) >= size)
    throw Error(fmt::format("GGUF tokenizer.ggml.{} {} is not below the vocabulary size {}", key, id, size));
  return id;
}

}  // namespace bpe_from_gguf_impl

ByteLevelBpeTokenizer ByteLevelBpeTokenizer::from_gguf(const GgufVocabulary& v) {
  namespace impl = bpe_from_gguf_impl;
  const std::string source = "GGUF tokenizer";
  if (v.model != "gpt2")
    throw Error(fmt::format("GGUF tokenizer.ggml.model '{}' is not supported (byte-level BPE 'gpt2' only)", v.model));
  auto pipeline = impl::pipeline_of(v.pre);
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size())
    throw Error(fmt::format("GGUF tokenizer.ggml.token_type has {} entries for {} tokens", v.token_types.size(),
                            v.tokens.size()));
  std::unordered_map<std::string, int64_t> vocab;
  vocab.reserve(v.tokens.size());
  std::vector<AddedToken> added;
  for (std::size_t id = 0; id < v.tokens.size(); ++id) {
    vocab[v.tokens[id]] = static_cast<int64_t>(id);  // a repeated token: the last id wins (as llama.cpp)
    const int32_t type = v.token_types.empty() ? 1 : v.token_types[id];
    if (type == 3 || type == 4) {
      AddedToken token;
      token.id = static_cast<int64_t>(id);
      token.content = v.tokens[id];
      token.special = type == 3;
      added.push_back(std::move(token));
    }
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(v.merges.size());
  for (const auto& merge : v.merges) {
    auto pair = split_merge(merge);
    if (!pair)
      throw Error(fmt::format("GGUF tokenizer.ggml.merges entry '{}' is not two tokens separated by one space", merge));
    merges.push_back(std::move(*pair));
  }
  BpeModel model(std::move(vocab), std::move(merges), pipeline.ignore_merges, source);
  ByteLevelBpeTokenizer out(std::move(model), BytePreTokenizer(std::move(pipeline.steps), source), pipeline.nfc,
                            std::move(added));
  out.bos_id_ = impl::checked_id(v.bos_id, v.tokens.size(), "bos_token_id");
  out.eos_id_ = impl::checked_id(v.eos_id, v.tokens.size(), "eos_token_id");
  out.unk_id_ = impl::checked_id(v.unk_id, v.tokens.size(), "unknown_token_id");
  out.pad_id_ = impl::checked_id(v.pad_id, v.tokens.size(), "padding_token_id");
  if (v.add_bos) {
    if (!out.bos_id_) throw Error("GGUF tokenizer.ggml.add_bos_token is true but there is no bos_token_id");
    out.prefix_ids_.push_back(*out.bos_id_);
  }
  if (v.add_eos) {
    if (!out.eos_id_) throw Error("GGUF tokenizer.ggml.add_eos_token is true but there is no eos_token_id");
    out.suffix_ids_.push_back(*out.eos_id_);
  }
  return out;
}

}  // namespace headprune::models
