#include "models/tokenizer/wordpiece_json.h"

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

/// Added tokens change how text splits: only the five BERT special tokens (kept whole by the
/// tokenizer) are modelled. A post-processor other than BERT's [CLS] A [SEP] is refused too.
void check_added_tokens(const nlohmann::json& tokenizer, const std::filesystem::path& file,
                        const WordPieceOptions& o) {
  const auto post = type_of(tokenizer, "post_processor");
  if (!post.empty() && post != "TemplateProcessing" && post != "BertProcessing")
    throw Error(fmt::format("{}: post_processor '{}' is not supported (BERT's [CLS] ... [SEP] only)",
                            file.string(), post));
  const auto added = tokenizer.find("added_tokens");
  if (added == tokenizer.end() || added->is_null()) return;
  for (const auto& token : *added) {
    const auto content = token.at("content").get<std::string>();
    if (content != o.unk_token && content != o.cls_token && content != o.sep_token &&
        content != o.pad_token && content != o.mask_token)
      throw Error(fmt::format("{}: added token '{}' is not supported (only {}, {}, {}, {}, {})",
                              file.string(), content, o.unk_token, o.cls_token, o.sep_token,
                              o.pad_token, o.mask_token));
  }
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
    check_added_tokens(tokenizer, file, options);
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

}  // namespace headprune::models
