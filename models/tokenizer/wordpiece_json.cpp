#include "models/tokenizer/wordpiece_json.h"

#include <utility>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

/// `section`'s "type", or "" when the section is absent or null.
std::string type_of(const nlohmann::json& tokenizer, const char* section) {
  const auto it = tokenizer.find(section);
  if (it == tokenizer.end() || it->is_null()) return "";
  return it->is_object() ? it->value("type", std::string()) : std::string("?");
}

/// Requires `section` to be of `expected` type. @throws Error naming the file.
void require_type(const nlohmann::json& tokenizer, const char* section, const char* expected,
                  const std::filesystem::path& file) {
  const auto type = type_of(tokenizer, section);
  if (type != expected)
    throw Error(fmt::format("{}: {} '{}' is not supported (headprune reads BERT WordPiece "
                            "tokenizer.json files: {} '{}')",
                            file.string(), section, type.empty() ? "none" : type, section, expected));
}

void apply_normalizer(const nlohmann::json& n, const std::filesystem::path& file, WordPieceOptions& o) {
  if (!n.value("clean_text", true))
    throw Error(fmt::format("{}: BertNormalizer clean_text false is not supported", file.string()));
  o.do_lower_case = n.value("lowercase", o.do_lower_case);
  o.tokenize_chinese_chars = n.value("handle_chinese_chars", o.tokenize_chinese_chars);
  const auto accents = n.find("strip_accents");
  if (accents != n.end()) o.strip_accents = accents->is_null() ? -1 : (accents->get<bool>() ? 1 : 0);
}

}  // namespace

std::vector<std::string> wordpiece_from_tokenizer_json(const nlohmann::json& tokenizer,
                                                       const std::filesystem::path& file,
                                                       WordPieceOptions& options) {
  try {
    require_type(tokenizer, "model", "WordPiece", file);
    require_type(tokenizer, "normalizer", "BertNormalizer", file);
    require_type(tokenizer, "pre_tokenizer", "BertPreTokenizer", file);
    const auto& model = tokenizer.at("model");
    if (model.value("continuing_subword_prefix", std::string("##")) != "##")
      throw Error(fmt::format("{}: continuing_subword_prefix other than '##' is not supported", file.string()));
    apply_normalizer(tokenizer.at("normalizer"), file, options);
    options.unk_token = model.value("unk_token", options.unk_token);
    options.added_tokens = wordpiece_added_tokens(tokenizer, file);
    if (const auto it = model.find("max_input_chars_per_word"); it != model.end()) {
      if (!it->is_number_unsigned())
        throw Error(fmt::format("{}: max_input_chars_per_word must be a non-negative integer, not {}",
                                file.string(), it->dump()));
      options.max_input_chars_per_word = it->get<std::size_t>();
    }
    const auto& map = model.at("vocab");
    std::vector<std::string> vocab(map.size());
    std::vector<bool> seen(map.size(), false);
    for (const auto& [token, id_json] : map.items()) {
      if (!id_json.is_number_integer())
        throw Error(fmt::format("{}: vocab id of '{}' is not an integer: {}", file.string(), token, id_json.dump()));
      const auto id = id_json.get<int64_t>();
      if (id < 0 || static_cast<std::size_t>(id) >= vocab.size() || seen[static_cast<std::size_t>(id)])
        throw Error(fmt::format("{}: vocab ids are not 0..{} (token '{}' has id {})", file.string(),
                                vocab.size() - 1, token, id));
      vocab[static_cast<std::size_t>(id)] = token;
      seen[static_cast<std::size_t>(id)] = true;
    }
    return vocab;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not a tokenizer.json WordPiece model ({})", file.string(), e.what()));
  }
}


std::vector<WordPieceAddedToken> wordpiece_added_tokens(const nlohmann::json& tokenizer,
                                                        const std::filesystem::path& file) {
  std::vector<WordPieceAddedToken> out;
  const auto added = tokenizer.find("added_tokens");
  if (added == tokenizer.end() || added->is_null()) return out;
  if (!added->is_array())
    throw Error(fmt::format("{}: added_tokens must be a list", file.string()));
  for (const auto& token : *added) {
    const auto content = token.is_object() ? token.find("content") : token.end();
    const auto id = token.is_object() ? token.find("id") : token.end();
    if (content == token.end() || !content->is_string() || id == token.end() || !id->is_number_integer())
      throw Error(fmt::format("{}: added token {} has no string content and integer id", file.string(),
                              token.dump()));
    if (token.value("single_word", false) == true)
      throw Error(fmt::format("{}: added token '{}' has single_word true, which is not supported",
                              file.string(), content->get<std::string>()));
    out.push_back({content->get<std::string>(), token.value("normalized", false) == true, id->get<int64_t>()});
  }
  return out;
}

void check_post_processor(const nlohmann::json& tokenizer, const std::filesystem::path& file,
                          const WordPieceOptions& options) {
  const auto type = type_of(tokenizer, "post_processor");
  if (type.empty() || type == "TemplateProcessing") return;
  if (type != "BertProcessing" && type != "RobertaProcessing")
    throw Error(fmt::format("{}: post_processor '{}' is not supported (BERT's [CLS] ... [SEP] only)",
                            file.string(), type));
  // {"cls": [token, id], "sep": [token, id]}: the tokens the encoder puts around a sequence.
  const auto& post = tokenizer.at("post_processor");
  for (const auto& [key, expected] : {std::pair{"cls", options.cls_token}, {"sep", options.sep_token}}) {
    const auto it = post.find(key);
    if (it == post.end() || !it->is_array() || it->empty() || it->at(0) != expected)
      throw Error(fmt::format("{}: post_processor {} is {}, but the tokenizer's {}_token is '{}'",
                              file.string(), key, it == post.end() ? "missing" : it->dump(), key, expected));
  }
}

}  // namespace headprune::models
