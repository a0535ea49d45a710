// BpeTokenizer from a GGUF file's byte-level BPE tokenizer metadata (llama.cpp `tokenizer.ggml.*`,
// tokenizer.ggml.model "gpt2"); the shared special-token ids.
#include <fmt/format.h>

#include "models/errors.h"
#include "models/tokenizer/bpe_tokenizer.h"

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

BpeTokenizer BpeTokenizer::from_gguf(const GgufVocabulary& v) {
  namespace impl = bpe_from_gguf_impl;
  const std::string source = "GGUF tokenizer";
  if (v.model == "llama") return from_sentencepiece_gguf(v);
  if (v.model != "gpt2")
    throw Error(fmt::format("GGUF tokenizer.ggml.model '{}' is not supported (byte-level BPE 'gpt2', or Gemma's "
                            "SentencePiece 'llama')",
                            v.model));
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
  BpeTokenizer out(std::move(model), BpePreTokenizer(std::move(pipeline.steps), source),
                   pipeline.nfc ? BpeNormalizer::kNfc : BpeNormalizer::kNone, BpeDecoder::kByteLevel, std::move(added),
                   source);
  out.set_special_ids(v);
  return out;
}

void BpeTokenizer::set_special_ids(const GgufVocabulary& v) {
  namespace impl = bpe_from_gguf_impl;
  bos_id_ = impl::checked_id(v.bos_id, v.tokens.size(), "bos_token_id");
  eos_id_ = impl::checked_id(v.eos_id, v.tokens.size(), "eos_token_id");
  unk_id_ = impl::checked_id(v.unk_id, v.tokens.size(), "unknown_token_id");
  pad_id_ = impl::checked_id(v.pad_id, v.tokens.size(), "padding_token_id");
  // llama.cpp adds BOS to a SentencePiece vocabulary that does not say otherwise, and so does
  // transformers (gguf_tokenizer_mapping.get_gguf_tokenizer).
  const bool add_bos = v.add_bos || (!v.add_bos_given && v.model == "llama");
  if (add_bos) {
    if (!bos_id_) throw Error("GGUF tokenizer.ggml.add_bos_token is true but there is no bos_token_id");
    prefix_ids_.push_back(*bos_id_);
  }
  if (v.add_eos) {
    if (!eos_id_) throw Error("GGUF tokenizer.ggml.add_eos_token is true but there is no eos_token_id");
    suffix_ids_.push_back(*eos_id_);
  }
}

}  // namespace headprune::models
