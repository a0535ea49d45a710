#include "models/tokenizer/post_processor.h"

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace {

/// Prefix / suffix ids of a TemplateProcessing "single" template: SpecialTokens around $A.
void read_template(const nlohmann::json& post, const std::string& source, std::vector<int64_t>& prefix,
                   std::vector<int64_t>& suffix) {
  bool seen_a = false;
  for (const auto& item : post.at("single")) {
    if (item.contains("Sequence")) {
      if (seen_a || item.at("Sequence").at("id").get<std::string>() != "A")
        throw Error(fmt::format("{}: post_processor TemplateProcessing single {} is not supported "
                                "(special tokens around one $A)",
                                source, post.at("single").dump()));
      seen_a = true;
      continue;
    }
    const auto name = item.at("SpecialToken").at("id").get<std::string>();
    const auto& special = post.at("special_tokens").at(name);
    for (const auto& id : special.at("ids")) (seen_a ? suffix : prefix).push_back(id.get<int64_t>());
  }
  if (!seen_a)
    throw Error(fmt::format("{}: post_processor TemplateProcessing single has no $A", source));
}

/// The id of RobertaProcessing / BertProcessing's `cls` or `sep`: ["<s>", 0].
int64_t processing_token_id(const nlohmann::json& post, const char* key, const std::string& source) {
  const auto it = post.find(key);
  if (it == post.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_string() ||
      !(*it)[1].is_number_integer() || (*it)[1].get<int64_t>() < 0)
    throw Error(fmt::format("{}: post_processor {} {} is not [token, id]", source, key,
                            it == post.end() ? "(missing)" : it->dump()));
  return (*it)[1].get<int64_t>();
}

}  // namespace

void read_post_processor(const nlohmann::json& post, const std::string& source, std::vector<int64_t>& prefix,
                         std::vector<int64_t>& suffix) {
  if (post.is_null()) return;
  const auto type = post.is_object() ? post.value("type", std::string("?")) : std::string("?");
  if (type == "ByteLevel") return;  // offsets only
  if (type == "TemplateProcessing") return read_template(post, source, prefix, suffix);
  if (type == "RobertaProcessing" || type == "BertProcessing") {  // cls $A sep (the rest: offsets)
    prefix.push_back(processing_token_id(post, "cls", source));
    suffix.push_back(processing_token_id(post, "sep", source));
    return;
  }
  if (type == "Sequence") {
    for (const auto& step : post.at("processors")) read_post_processor(step, source, prefix, suffix);
    return;
  }
  throw Error(fmt::format("{}: post_processor '{}' is not supported (ByteLevel, TemplateProcessing, "
                          "RobertaProcessing, BertProcessing or none)",
                          source, type));
}

}  // namespace headprune::models
