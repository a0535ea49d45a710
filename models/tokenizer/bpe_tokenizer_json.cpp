// BpeTokenizer <-> HF tokenizer.json (huggingface/tokenizers `Tokenizer` serialisation).
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/tokenizer_json_sections.h"

namespace headprune::models {
namespace bpe_tokenizer_json_impl {

const nlohmann::json kReplaceSpace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
const nlohmann::json kPrependMetaspace = {{"type", "Prepend"}, {"prepend", "\u2581"}};
const nlohmann::json kByteFallbackDecoder = {
    {"type", "Sequence"},
    {"decoders",
     {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}}, {{"type", "ByteFallback"}},
      {{"type", "Fuse"}}}}};
const nlohmann::json kStripOneSpace = {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}};

/// The ByteFallback decoder followed by Strip(" ", 1, 0) (LLaMA's SentencePiece tokenizer.json).
nlohmann::json byte_fallback_strip_decoder() {
  auto j = kByteFallbackDecoder;
  j["decoders"].push_back(kStripOneSpace);
  return j;
}

const char* const kPrependSchemes[] = {"never", "first", "always"};

/// A boolean option of the BPE model (absent or null: false). @throws Error on a non-boolean.
bool flag(const nlohmann::json& model, const char* key, const std::string& source) {
  const auto it = model.find(key);
  if (it == model.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw Error(fmt::format("{}: BPE {} {} is not true or false", source, key, it->dump()));
  return it->get<bool>();
}

/// Refuses a BPE model option that is set to anything but its neutral value.
void refuse_option(const nlohmann::json& model, const char* key, const std::string& source) {
  const auto it = model.find(key);
  if (it == model.end() || it->is_null() || (it->is_boolean() && !it->get<bool>()) ||
      (it->is_string() && it->get<std::string>().empty()))
    return;
  throw Error(fmt::format("{}: BPE {} {} is not supported (BPE without it only)", source, key, it->dump()));
}

std::vector<std::pair<std::string, std::string>> read_merges(const nlohmann::json& merges, const std::string& source) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const auto& merge : merges) {
    if (merge.is_string()) {  // "a b" (tokenizers < 0.20)
      auto pair = split_merge(merge.get<std::string>());
      if (!pair)
        throw Error(fmt::format("{}: merge {} is not two tokens separated by one space", source, merge.dump()));
      out.push_back(std::move(*pair));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      out.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      throw Error(fmt::format("{}: merge {} is neither \"a b\" nor [\"a\", \"b\"]", source, merge.dump()));
    }
  }
  return out;
}

BpeModel read_model(const nlohmann::json& tokenizer, const std::string& source) {
  const auto type = section_type(tokenizer, "model");
  if (type != "BPE")
    throw Error(fmt::format("{}: model type '{}' is not supported by the BPE tokenizer (BPE only)",
                            source, type.empty() ? "none" : type));
  const auto& model = tokenizer.at("model");
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"})
    refuse_option(model, key, source);
  std::unordered_map<std::string, int64_t> vocab;
  const auto& map = model.at("vocab");
  if (!map.is_object()) throw Error(fmt::format("{}: model.vocab is not an object", source));
  vocab.reserve(map.size());
  for (const auto& [token, id] : map.items()) {
    if (!id.is_number_integer())
      throw Error(fmt::format("{}: vocab id of '{}' is not an integer: {}", source, token, id.dump()));
    vocab.emplace(token, id.get<int64_t>());
  }
  const auto& merges = model.at("merges");
  if (!merges.is_array()) throw Error(fmt::format("{}: model.merges is not a list", source));
  BpeUnknowns unknowns;
  unknowns.byte_fallback = flag(model, "byte_fallback", source);
  unknowns.fuse_unk = flag(model, "fuse_unk", source);
  if (const auto unk = model.find("unk_token"); unk != model.end() && !unk->is_null()) {
    const auto it = unk->is_string() ? vocab.find(unk->get<std::string>()) : vocab.end();
    if (it == vocab.end())
      throw Error(fmt::format("{}: BPE unk_token {} is not in the vocabulary", source, unk->dump()));
    unknowns.unk_id = it->second;
  }
  return BpeModel(std::move(vocab), read_merges(merges, source), flag(model, "ignore_merges", source), source,
                  unknowns);
}

/// The normalizer, or the one step of a Sequence of one. @throws Error on any other.
BpeNormalizer read_normalizer(const nlohmann::json& tokenizer, const std::string& source) {
  const auto type = section_type(tokenizer, "normalizer");
  if (type.empty()) return BpeNormalizer::kNone;
  auto step = tokenizer.at("normalizer");
  if (type == "Sequence") {
    const auto& list = step.at("normalizers");
    if (list.is_array() && list.empty()) return BpeNormalizer::kNone;
    if (list.is_array() && list.size() == 1) step = list[0];
  }
  if (step == nlohmann::json{{"type", "NFC"}}) return BpeNormalizer::kNfc;
  if (step == kReplaceSpace) return BpeNormalizer::kSpaceToMetaspace;
  if (step == nlohmann::json{{"type", "Sequence"}, {"normalizers", {kPrependMetaspace, kReplaceSpace}}})
    return BpeNormalizer::kPrependSpaceToMetaspace;
  throw Error(fmt::format("{}: normalizer {} is not supported (none, NFC, Replace \" \" with \"\u2581\", or "
                          "Prepend \"\u2581\" + that Replace)",
                          source, tokenizer.at("normalizer").dump()));
}

BpeDecoder read_decoder(const nlohmann::json& tokenizer, const std::string& source) {
  const auto type = section_type(tokenizer, "decoder");
  if (type == "ByteLevel") return BpeDecoder::kByteLevel;
  if (tokenizer.at("decoder") == kByteFallbackDecoder) return BpeDecoder::kByteFallback;
  if (tokenizer.at("decoder") == byte_fallback_strip_decoder()) return BpeDecoder::kByteFallbackStrip;
  throw Error(fmt::format("{}: decoder {} is not supported (ByteLevel, or Replace \"\u2581\" with \" \" + "
                          "ByteFallback + Fuse, optionally + Strip(\" \", 1, 0))",
                          source, type.empty() ? "none" : tokenizer.at("decoder").dump()));
}

/// A Metaspace pre-tokenizer ("▁", split false) as BpeMetaspace; kNone for any other pre-tokenizer.
/// @throws Error on a Metaspace with another replacement, split true, or an unknown prepend_scheme.
BpeMetaspace read_metaspace(const nlohmann::json& pre, const std::string& source) {
  if (!pre.is_object() || pre.value("type", std::string()) != "Metaspace") return BpeMetaspace::kNone;
  for (const auto& [key, value] : pre.items()) {
    const bool ok = (key == "type") || (key == "replacement" && value == "\u2581") || (key == "split" && value == false) ||
                    (key == "prepend_scheme" && value.is_string());
    if (!ok)
      throw Error(fmt::format("{}: pre_tokenizer Metaspace with {} {} is not supported (replacement \"\u2581\", "
                              "split false, prepend_scheme first / always / never)",
                              source, key, value.dump()));
  }
  const auto scheme = pre.value("prepend_scheme", std::string("always"));
  for (int i = 0; i < 3; ++i)
    if (scheme == kPrependSchemes[i]) return static_cast<BpeMetaspace>(i + 1);
  throw Error(fmt::format("{}: Metaspace prepend_scheme '{}' is not first, always or never", source, scheme));
}

nlohmann::json read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", file.string()));
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) throw Error(fmt::format("{}: not valid JSON", file.string()));
  return j;
}

/// A token name of tokenizer_config.json: a string, or {"content": ...} (AddedToken), or nothing.
std::optional<std::string> config_token(const nlohmann::json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const auto& value = config.at(key);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value.at("content").is_string())
    return value.at("content").get<std::string>();
  return std::nullopt;
}

}  // namespace bpe_tokenizer_json_impl

BpeTokenizer BpeTokenizer::from_json(const nlohmann::json& tokenizer, const std::string& source,
                                                       const nlohmann::json& config) {
  namespace impl = bpe_tokenizer_json_impl;
  try {
    if (!tokenizer.is_object()) throw Error(fmt::format("{}: not a tokenizer.json object", source));
    auto model = impl::read_model(tokenizer, source);
    const auto normalizer = impl::read_normalizer(tokenizer, source);
    const auto decoder = impl::read_decoder(tokenizer, source);
    const auto pre_json = tokenizer.value("pre_tokenizer", nlohmann::json());
    const auto metaspace = impl::read_metaspace(pre_json, source);
    auto pre = BpePreTokenizer::from_json(metaspace == BpeMetaspace::kNone ? pre_json : nlohmann::json(), source);
    std::vector<AddedToken> added;
    if (const auto it = tokenizer.find("added_tokens"); it != tokenizer.end() && !it->is_null())
      for (const auto& token : *it) {
        added.push_back(AddedToken::from_json(token, source));
        // HF AddedVocabulary: a content already in the model's vocabulary keeps the model's id.
        if (const auto id = model.token_to_id(added.back().content)) added.back().id = *id;
      }
    BpeTokenizer out(std::move(model), std::move(pre), normalizer, decoder, std::move(added), source);
    out.metaspace_ = metaspace;
    read_post_processor(tokenizer.value("post_processor", nlohmann::json()), source, out.prefix_ids_,
                              out.suffix_ids_);
    const auto id_of = [&](const char* key) -> std::optional<int64_t> {
      const auto name = impl::config_token(config, key);
      return name ? out.token_to_id(*name) : std::nullopt;
    };
    out.bos_id_ = id_of("bos_token");
    out.eos_id_ = id_of("eos_token");
    out.unk_id_ = id_of("unk_token");
    out.pad_id_ = id_of("pad_token");
    return out;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not a BPE tokenizer.json ({})", source, e.what()));
  }
}

BpeTokenizer BpeTokenizer::from_tokenizer_json(const std::filesystem::path& file) {
  const auto tokenizer = bpe_tokenizer_json_impl::read_file(file);
  const auto config_file = file.parent_path() / "tokenizer_config.json";
  const auto config = std::filesystem::is_regular_file(config_file) ? bpe_tokenizer_json_impl::read_file(config_file)
                                                                    : nlohmann::json();
  return from_json(tokenizer, file.string(), config);
}

nlohmann::json BpeTokenizer::post_processor_json() const {
  auto single = nlohmann::json::array(), pair = nlohmann::json::array();
  nlohmann::json specials = nlohmann::json::object();
  const auto special = [&](int64_t id, nlohmann::json& list, int type_id) {
    const auto name = token_text(id);
    list.push_back({{"SpecialToken", {{"id", name}, {"type_id", type_id}}}});
    specials[name] = {{"id", name}, {"ids", {id}}, {"tokens", {name}}};
  };
  for (const auto id : prefix_ids_) {
    special(id, single, 0);
    special(id, pair, 0);
  }
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  pair.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  for (const auto id : suffix_ids_) {
    special(id, single, 0);
    special(id, pair, 0);
  }
  for (const auto id : prefix_ids_) special(id, pair, 1);
  pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  for (const auto id : suffix_ids_) special(id, pair, 1);
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

nlohmann::json BpeTokenizer::normalizer_json() const {
  switch (normalizer_) {
    case BpeNormalizer::kNfc:
      return {{"type", "NFC"}};
    case BpeNormalizer::kSpaceToMetaspace:
      return bpe_tokenizer_json_impl::kReplaceSpace;
    case BpeNormalizer::kPrependSpaceToMetaspace:
      return {{"type", "Sequence"},
              {"normalizers", {bpe_tokenizer_json_impl::kPrependMetaspace, bpe_tokenizer_json_impl::kReplaceSpace}}};
    case BpeNormalizer::kNone:
      break;
  }
  return nullptr;
}

nlohmann::json BpeTokenizer::pre_tokenizer_json() const {
  if (metaspace_ == BpeMetaspace::kNone) return pre_tokenizer_.to_json();
  return {{"type", "Metaspace"},
          {"replacement", kMetaspace},
          {"prepend_scheme", bpe_tokenizer_json_impl::kPrependSchemes[static_cast<int>(metaspace_) - 1]},
          {"split", false}};
}

nlohmann::json BpeTokenizer::decoder_json() const {
  switch (decoder_) {
    case BpeDecoder::kByteFallback:
      return bpe_tokenizer_json_impl::kByteFallbackDecoder;
    case BpeDecoder::kByteFallbackStrip:
      return bpe_tokenizer_json_impl::byte_fallback_strip_decoder();
    case BpeDecoder::kByteLevel:
      break;
  }
  return {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
}

nlohmann::json BpeTokenizer::to_tokenizer_json() const {
  auto added = nlohmann::json::array();
  for (const auto& token : added_) added.push_back(token.to_json());
  nlohmann::json vocab = nlohmann::json::object();
  for (const auto& [token, id] : model_.vocab()) vocab[token] = id;
  auto merges = nlohmann::json::array();
  for (const auto& [a, b] : model_.merges()) merges.push_back({a, b});
  const auto& unknowns = model_.unknowns();
  const nlohmann::json model = {{"type", "BPE"},
                                {"dropout", nullptr},
                                {"unk_token", unknowns.unk_id ? nlohmann::json(token_text(*unknowns.unk_id)) : nullptr},
                                {"continuing_subword_prefix", nullptr},
                                {"end_of_word_suffix", nullptr},
                                {"fuse_unk", unknowns.fuse_unk},
                                {"byte_fallback", unknowns.byte_fallback},
                                {"ignore_merges", model_.ignore_merges()},
                                {"vocab", vocab},
                                {"merges", merges}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", normalizer_json()},
          {"pre_tokenizer", pre_tokenizer_json()},
          {"post_processor", post_processor_json()},
          {"decoder", decoder_json()},
          {"model", model}};
}

nlohmann::json BpeTokenizer::to_tokenizer_config_json() const {
  nlohmann::json config = {{"tokenizer_class", "PreTrainedTokenizerFast"}};
  const auto put = [&](const char* key, const std::optional<int64_t>& id) {
    if (id) config[key] = token_text(*id);
  };
  put("bos_token", bos_id_);
  put("eos_token", eos_id_);
  put("unk_token", unk_id_);
  put("pad_token", pad_id_);
  return config;
}

}  // namespace headprune::models
