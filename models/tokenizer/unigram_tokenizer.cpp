#include "models/tokenizer/unigram_tokenizer.h"

#include <fstream>

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/tokenizer_json_sections.h"

namespace headprune::models {
namespace {

UnigramModel read_model(const nlohmann::json& tokenizer, const std::string& source) {
  const auto type = section_type(tokenizer, "model");
  if (type != "Unigram")
    throw Error(fmt::format("{}: model type '{}' is not supported by the Unigram tokenizer (Unigram only)",
                            source, type.empty() ? "none" : type));
  const auto& model = tokenizer.at("model");
  for (const auto& [key, value] : model.items())  // what tokenizers' Unigram serialises
    if (key != "type" && key != "vocab" && key != "unk_id" && key != "byte_fallback")
      throw Error(fmt::format("{}: Unigram model key '{}' is not modelled by headprune (type, vocab, unk_id, "
                              "byte_fallback)",
                              source, key));
  if (model.value("byte_fallback", false))
    throw Error(fmt::format("{}: Unigram byte_fallback true is not supported", source));
  const auto& list = model.at("vocab");
  if (!list.is_array()) throw Error(fmt::format("{}: model.vocab is not a list", source));
  std::vector<std::pair<std::string, double>> vocab;
  vocab.reserve(list.size());
  for (const auto& entry : list) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
      throw Error(fmt::format("{}: Unigram vocabulary entry {} of {} is not [piece, score]", source, vocab.size(),
                              entry.dump().substr(0, 80)));
    vocab.emplace_back(entry[0].get<std::string>(), entry[1].get<double>());
  }
  std::optional<int64_t> unk_id;
  if (const auto it = model.find("unk_id"); it != model.end() && !it->is_null()) {
    if (!it->is_number_integer()) throw Error(fmt::format("{}: Unigram unk_id {} is not an integer", source, it->dump()));
    unk_id = it->get<int64_t>();
  }
  return UnigramModel(std::move(vocab), unk_id, source);
}

/// The Precompiled normalizer, alone or as the one step of a Sequence; none for null.
std::optional<PrecompiledCharsmap> read_normalizer(const nlohmann::json& tokenizer, const std::string& source) {
  const auto type = section_type(tokenizer, "normalizer");
  if (type.empty()) return std::nullopt;
  auto step = tokenizer.at("normalizer");
  if (type == "Sequence" && step.at("normalizers").is_array() && step.at("normalizers").size() == 1)
    step = step.at("normalizers")[0];
  if (step.is_object() && step.value("type", "") == "Precompiled" && step.contains("precompiled_charsmap") &&
      step.at("precompiled_charsmap").is_string())
    return PrecompiledCharsmap::from_base64(step.at("precompiled_charsmap").get<std::string>(), source);
  throw Error(fmt::format("{}: normalizer {} is not supported by the Unigram tokenizer (Precompiled with a "
                          "precompiled_charsmap, or none)",
                          source, step.dump().substr(0, 120)));
}

/// Metaspace's settings: (prepend "▁", split). @throws Error on other replacements / schemes.
std::pair<bool, bool> read_metaspace(const nlohmann::json& step, const std::string& source) {
  if (step.value("replacement", std::string()) != "\u2581")
    throw Error(fmt::format("{}: Metaspace replacement {} is not supported (\"\u2581\" only)", source,
                            step.contains("replacement") ? step.at("replacement").dump() : "(missing)"));
  std::string scheme;
  if (const auto it = step.find("prepend_scheme"); it != step.end() && it->is_string())
    scheme = it->get<std::string>();
  else  // tokenizers < 0.14: add_prefix_space
    scheme = step.value("add_prefix_space", true) ? "always" : "never";
  if (scheme != "always" && scheme != "never")
    throw Error(fmt::format("{}: Metaspace prepend_scheme '{}' is not supported by the Unigram tokenizer "
                            "(always, never)",
                            source, scheme));
  return {scheme == "always", step.value("split", true)};
}

}  // namespace

UnigramTokenizer::UnigramTokenizer(UnigramModel model, std::optional<PrecompiledCharsmap> charsmap,
                                   std::vector<AddedToken> added)
    : model_(std::move(model)), charsmap_(std::move(charsmap)), added_(std::move(added)) {
  std::vector<AddedToken> raw, normalized;
  for (auto token : added_) {
    added_text_.emplace(token.id, token.content);
    if (token.special) special_ids_.insert(token.id);
    if (token.normalized) {
      token.content = normalize(token.content);  // HF matches normalized tokens in normalized form
      normalized.push_back(std::move(token));
    } else {
      raw.push_back(std::move(token));
    }
  }
  raw_matcher_ = AddedTokenMatcher(std::move(raw));
  normalized_matcher_ = AddedTokenMatcher(std::move(normalized));
}

UnigramTokenizer UnigramTokenizer::from_json(const nlohmann::json& tokenizer, const std::string& source,
                                             const nlohmann::json& config) {
  try {
    if (!tokenizer.is_object()) throw Error(fmt::format("{}: not a tokenizer.json object", source));
    auto model = read_model(tokenizer, source);
    auto charsmap = read_normalizer(tokenizer, source);
    std::vector<AddedToken> added;
    if (const auto it = tokenizer.find("added_tokens"); it != tokenizer.end() && !it->is_null())
      for (const auto& token : *it) {
        added.push_back(AddedToken::from_json(token, source));
        // HF AddedVocabulary: a content already in the model's vocabulary keeps the model's id.
        if (const auto id = model.token_to_id(added.back().content)) added.back().id = *id;
      }
    UnigramTokenizer out(std::move(model), std::move(charsmap), std::move(added));

    auto pre = tokenizer.value("pre_tokenizer", nlohmann::json());
    if (section_type(tokenizer, "pre_tokenizer") == "Sequence") {
      const auto& steps = pre.at("pretokenizers");
      if (!steps.is_array() || steps.size() != 2 || section_type({{"s", steps[0]}}, "s") != "WhitespaceSplit")
        throw Error(fmt::format("{}: pre_tokenizer Sequence {} is not supported (WhitespaceSplit, Metaspace)",
                                source, pre.dump().substr(0, 160)));
      out.whitespace_split_ = true;
      pre = steps[1];
    }
    if (!pre.is_object() || pre.value("type", "") != "Metaspace")
      throw Error(fmt::format("{}: pre_tokenizer {} is not supported by the Unigram tokenizer (Metaspace, or "
                              "Sequence[WhitespaceSplit, Metaspace])",
                              source, pre.dump().substr(0, 120)));
    std::tie(out.prepend_metaspace_, out.split_metaspace_) = read_metaspace(pre, source);

    const auto decoder = section_type(tokenizer, "decoder");
    if (!decoder.empty() && decoder != "Metaspace")
      throw Error(fmt::format("{}: decoder '{}' is not supported by the Unigram tokenizer (Metaspace or none)",
                              source, decoder));
    read_post_processor(tokenizer.value("post_processor", nlohmann::json()), source, out.prefix_ids_,
                        out.suffix_ids_);
    for (const auto& ids : {out.prefix_ids_, out.suffix_ids_})
      for (const auto id : ids)
        if (!out.added_text_.count(id) && (id < 0 || id >= static_cast<int64_t>(out.model_.size())))
          throw Error(fmt::format("{}: post_processor adds id {}, which is not in the vocabulary of {}", source, id,
                                  out.model_.size()));

    std::string pad = "<pad>";
    if (config.is_object() && config.contains("pad_token")) {
      const auto& value = config.at("pad_token");
      if (value.is_string()) pad = value.get<std::string>();
      if (value.is_object() && value.contains("content") && value.at("content").is_string())
        pad = value.at("content").get<std::string>();
    }
    out.pad_id_ = out.token_to_id(pad).value_or(0);
    return out;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed tokenizer.json ({})", source, e.what()));
  }
}

UnigramTokenizer UnigramTokenizer::from_tokenizer_json(const std::filesystem::path& file) {
  const auto config_file = file.parent_path() / "tokenizer_config.json";
  const auto config = std::filesystem::is_regular_file(config_file) ? read_json_file(config_file) : nlohmann::json();
  return from_json(read_json_file(file), file.string(), config);
}

std::string UnigramTokenizer::normalize(const std::string& text) const {
  return charsmap_ ? charsmap_->normalize(text) : text;
}

std::vector<std::string> UnigramTokenizer::pre_tokenize(const std::string& text) const {
  std::vector<std::string> pieces;
  if (whitespace_split_) {
    std::string word;
    for (std::size_t pos = 0; pos < text.size();) {
      char32_t c = 0;
      const auto n = utf8_next(text, pos, c);
      if (is_white_space(c)) {
        if (!word.empty()) pieces.push_back(std::move(word));
        word.clear();
      } else {
        word.append(text, pos, n);
      }
      pos += n;
    }
    if (!word.empty()) pieces.push_back(std::move(word));
  } else if (!text.empty()) {
    pieces.push_back(text);
  }
  static const std::string kSpace = "\u2581";
  std::vector<std::string> words;
  for (const auto& piece : pieces) {
    std::string replaced;
    for (const char ch : piece) replaced += ch == ' ' ? kSpace : std::string(1, ch);
    if (prepend_metaspace_ && replaced.rfind(kSpace, 0) != 0) replaced.insert(0, kSpace);
    if (!split_metaspace_) {
      words.push_back(std::move(replaced));
      continue;
    }
    // SplitDelimiterBehavior::MergedWithNext: each "▁" starts a word.
    std::size_t start = 0;
    for (auto pos = replaced.find(kSpace, 1); pos != std::string::npos; pos = replaced.find(kSpace, pos + 1)) {
      words.push_back(replaced.substr(start, pos - start));
      start = pos;
    }
    words.push_back(replaced.substr(start));
  }
  return words;
}

std::vector<int64_t> UnigramTokenizer::encode_text(const std::string& text, bool add_special_tokens) const {
  require_utf8(text, "Unigram tokenizer");
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = prefix_ids_;
  encode_with_added_tokens(
      text, raw_matcher_, normalized_matcher_, [this](const std::string& t) { return normalize(t); },
      [this](const std::string& piece, bool, std::vector<int64_t>& out) {
        for (const auto& word : pre_tokenize(piece)) model_.encode(word, out);
      },
      ids);
  if (add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::vector<int64_t> UnigramTokenizer::encode(const std::string& text, std::size_t max_length) const {
  return truncate_and_frame(encode_text(text, false), prefix_ids_, suffix_ids_, max_length, "Unigram tokenizer");
}

std::string UnigramTokenizer::token_text(int64_t id) const {
  if (const auto it = added_text_.find(id); it != added_text_.end()) return it->second;
  if (id < 0 || id >= static_cast<int64_t>(model_.size()))
    throw Error(fmt::format("Unigram tokenizer: id {} is not in the vocabulary of {}", id, model_.size()));
  return model_.piece(id);
}

std::optional<int64_t> UnigramTokenizer::token_to_id(const std::string& token) const {
  for (const auto& token_entry : added_)
    if (token_entry.content == token) return token_entry.id;
  return model_.token_to_id(token);
}

}  // namespace headprune::models
