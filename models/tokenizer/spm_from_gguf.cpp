// BpeTokenizer from a Gemma GGUF's SentencePiece vocabulary (tokenizer.ggml.model "llama"), built
// as transformers 5.24 builds GemmaTokenizer from the same file
// (integrations/gguf/gguf_tokenizer_mapping.py: get_gguf_tokenizer, gemma_tokenizer,
// add_gguf_special_tokens; GemmaTokenizer.__init__):
//   1. a token of spaces only ("  ", stored with real spaces) is respelled as as many "▁";
//   2. the file lists no merges: they are recovered from the vocabulary, ordered by the token's
//      position in the file (earlier first), not by its SentencePiece score (merges_from_scores);
//   3. BPE with byte fallback, unk_token the file's unknown token, fuse_unk; normalizer
//      Replace(" ", "▁"), pre-tokenizer Split(" ", MergedWithPrevious), decoder Replace("▁", " ")
//      + ByteFallback + Fuse;
//   4. control tokens (type 3) and the named special tokens (bos, eos, unk, pad, and "<mask>")
//      become special added tokens, user-defined ones (type 4) plain added tokens when their
//      text is in the vocabulary as spelled (the respelled space runs are not);
//   5. BOS before the text unless add_bos_token says false; EOS after it if add_eos_token.
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/byte_level.h"

namespace headprune::models {
namespace spm_from_gguf_impl {

/// Python's str.isspace of one character: Unicode White_Space and U+001C..U+001F.
bool python_space(char32_t c) { return is_white_space(c) || (c >= 0x1C && c <= 0x1F); }

/// `token` respelled as transformers' gemma_tokenizer does: a token of whitespace that contains
/// a space becomes one "▁" per character.
std::string respelled(const std::string& token) {
  if (token.find(' ') == std::string::npos) return token;
  std::string out;
  for (std::size_t pos = 0; pos < token.size();) {
    char32_t c = 0;
    pos += utf8_next(token, pos, c);
    if (!python_space(c)) return token;
    out += kMetaspace;
  }
  return out;
}

AddedToken added(int64_t id, const std::string& content, bool special) {
  AddedToken token;
  token.id = id;
  token.content = content;
  token.special = special;
  return token;
}

}  // namespace spm_from_gguf_impl

bool is_gemma_sentencepiece(const std::string& architecture) {
  return architecture == "gemma" || architecture == "gemma2" || architecture == "gemma3";
}

BpeTokenizer BpeTokenizer::from_sentencepiece_gguf(const GgufVocabulary& v) {
  namespace impl = spm_from_gguf_impl;
  const std::string source = "GGUF tokenizer";
  if (!is_gemma_sentencepiece(v.architecture))
    throw Error(fmt::format("GGUF SentencePiece vocabulary (tokenizer.ggml.model 'llama') of architecture '{}' is "
                            "not supported (Gemma's only: gemma, gemma2, gemma3)",
                            v.architecture));
  if (!v.merges.empty())
    throw Error("GGUF tokenizer.ggml.merges in a Gemma SentencePiece vocabulary is not modelled (Gemma files "
                "list none)");
  std::vector<std::string> tokens;
  std::vector<double> positions;
  tokens.reserve(v.tokens.size());
  positions.reserve(v.tokens.size());
  for (std::size_t id = 0; id < v.tokens.size(); ++id) {
    require_utf8(v.tokens[id], fmt::format("GGUF token {}", id));
    tokens.push_back(impl::respelled(v.tokens[id]));
    positions.push_back(-static_cast<double>(id));
  }
  std::unordered_map<std::string, int64_t> vocab;
  vocab.reserve(tokens.size());
  for (std::size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = static_cast<int64_t>(id);
  const auto id_of = [&](const std::string& token, const char* what) {
    const auto it = vocab.find(token);
    if (it == vocab.end())
      throw Error(fmt::format("GGUF tokenizer: {} '{}' is not in the vocabulary (transformers would add it as a "
                              "new token; not modelled)",
                              what, token));
    return it->second;
  };
  BpeUnknowns unknowns;
  unknowns.byte_fallback = true;
  unknowns.fuse_unk = true;
  if (v.unk_id < 0 || static_cast<std::size_t>(v.unk_id) >= v.tokens.size())
    throw Error(fmt::format("GGUF tokenizer.ggml.unknown_token_id {} is not a token of this Gemma vocabulary "
                            "(transformers would name the unknown token 'None'; not modelled)",
                            v.unk_id < 0 ? std::string("(missing)") : std::to_string(v.unk_id)));
  unknowns.unk_id = id_of(v.tokens[static_cast<std::size_t>(v.unk_id)], "unk_token");
  // Specials first, in GemmaTokenizer's order, then control tokens, then user-defined ones;
  // the added vocabulary keeps each content once.
  std::vector<AddedToken> added;
  std::unordered_set<std::string> listed;
  const auto add = [&](const std::string& content, bool special) {
    if (listed.insert(content).second) added.push_back(impl::added(id_of(content, "special token"), content, special));
  };
  for (const auto id : {v.pad_id, v.eos_id, v.bos_id, v.unk_id})
    if (id >= 0 && static_cast<std::size_t>(id) < v.tokens.size()) add(v.tokens[static_cast<std::size_t>(id)], true);
  add("<mask>", true);
  for (std::size_t id = 0; id < v.tokens.size(); ++id)
    if (!v.token_types.empty() && v.token_types[id] == 3) add(v.tokens[id], true);
  for (std::size_t id = 0; id < v.tokens.size(); ++id)
    if (!v.token_types.empty() && v.token_types[id] == 4 && vocab.count(v.tokens[id])) add(v.tokens[id], false);
  auto merges = merges_from_scores(tokens, positions);
  BpeModel model(std::move(vocab), std::move(merges), false, source, unknowns);
  PreTokenizerStep split;
  split.kind = PreTokenizerStep::Kind::kSplit;
  split.pattern = " ";
  split.literal = true;
  split.merged_with_previous = true;
  BpeTokenizer out(std::move(model), BpePreTokenizer({split}, source), BpeNormalizer::kSpaceToMetaspace,
                   BpeDecoder::kByteFallback, std::move(added), source);
  out.set_special_ids(v);
  return out;
}

GgufVocabulary gemma_gguf_vocabulary(const BpeTokenizer& tokenizer) {
  namespace impl = spm_from_gguf_impl;
  if (tokenizer.decoder() != BpeDecoder::kByteFallback)
    throw Error("GGUF SentencePiece vocabulary: the tokenizer is byte-level BPE, not SentencePiece-style");
  const auto j = tokenizer.to_tokenizer_json();
  GgufVocabulary v;
  v.architecture = "gemma3";
  v.model = "llama";
  v.pre = "default";
  const auto n = static_cast<std::size_t>(tokenizer.vocab_size());
  v.tokens.assign(n, std::string());
  v.token_types.assign(n, 0);
  for (const auto& [text, id] : j.at("model").at("vocab").items()) {
    const auto i = id.get<std::size_t>();
    const bool spaces = text.size() >= 6 && text.size() % 3 == 0 && impl::respelled(std::string(text.size() / 3, ' ')) == text;
    v.tokens[i] = spaces ? std::string(text.size() / 3, ' ') : text;
    v.token_types[i] = spaces ? 4 : text.size() == 6 && text.compare(0, 3, "<0x") == 0 ? 6 : 1;
  }
  for (const auto& added : j.at("added_tokens")) {
    const auto i = added.at("id").get<std::size_t>();
    v.tokens.at(i) = added.at("content").get<std::string>();
    v.token_types.at(i) = added.at("special").get<bool>() ? 3 : 4;
  }
  float rank = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (v.token_types[i] == 0) throw Error(fmt::format("GGUF SentencePiece vocabulary: no token has id {}", i));
    v.scores.push_back(v.token_types[i] == 1 ? -rank++ : v.token_types[i] == 6 ? 0.0F : -1000.0F);
  }
  const auto id_or = [](const std::optional<int64_t>& id) { return id.value_or(-1); };
  v.bos_id = id_or(tokenizer.bos_id());
  v.eos_id = id_or(tokenizer.eos_id());
  const auto config = tokenizer.to_tokenizer_config_json();
  const auto named = [&](const char* key) {
    return config.contains(key) ? id_or(tokenizer.token_to_id(config.at(key).get<std::string>())) : int64_t{-1};
  };
  v.unk_id = named("unk_token");
  v.pad_id = named("pad_token");
  const auto plain = tokenizer.encode_text("a", false), full = tokenizer.encode_text("a", true);
  v.add_bos = full.size() > plain.size() && full.front() == v.bos_id;
  v.add_eos = full.size() > plain.size() && full.back() == v.eos_id;
  if (full.size() != plain.size() + (v.add_bos ? 1 : 0) + (v.add_eos ? 1 : 0))
    throw Error("GGUF SentencePiece vocabulary: the tokenizer adds more than one BOS before and one EOS after the "
                "text, which llama.cpp cannot express");
  return v;
}

}  // namespace headprune::models
