#include "models/tokenizer/tokenizer_json_sections.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_get.h"

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
    for (const auto& id : special.at("ids"))
      (seen_a ? suffix : prefix).push_back(json_integer(id, fmt::format("{}: post_processor id of {}", source, name)));
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

std::string section_type(const nlohmann::json& j, const char* section) {
  const auto it = j.find(section);
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_object()) return "?";
  const auto type = it->find("type");
  return type != it->end() && type->is_string() ? type->get<std::string>() : std::string("?");
}

std::vector<int64_t> truncate_and_frame(std::vector<int64_t> body, const std::vector<int64_t>& prefix,
                                        const std::vector<int64_t>& suffix, std::size_t max_length,
                                        const std::string& who) {
  const auto added = prefix.size() + suffix.size();
  if (max_length < added || max_length == 0)
    throw Error(fmt::format("{}: max_length {} leaves no room for the text (the tokenizer adds {} special "
                            "token(s))",
                            who, max_length, added));
  if (body.size() > max_length - added) body.resize(max_length - added);
  body.insert(body.begin(), prefix.begin(), prefix.end());
  body.insert(body.end(), suffix.begin(), suffix.end());
  return body;
}

}  // namespace headprune::models
