#include "models/tokenizer/added_vocabulary.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_get.h"
#include "models/tokenizer/byte_level.h"

namespace headprune::models {
namespace added_vocabulary_impl {

/// Start of the White_Space run that ends at `pos` (not before `floor`).
std::size_t strip_left(const std::string& text, std::size_t pos, std::size_t floor) {
  while (pos > floor) {
    std::size_t start = pos - 1;
    while (start > floor && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    char32_t c = 0;
    utf8_next(text, start, c);
    if (!is_white_space(c)) break;
    pos = start;
  }
  return pos;
}

/// End of the White_Space run that starts at `pos` (not after `limit`).
std::size_t strip_right(const std::string& text, std::size_t pos, std::size_t limit) {
  while (pos < limit) {
    char32_t c = 0;
    const auto n = utf8_next(text, pos, c);
    if (!is_white_space(c)) break;
    pos += n;
  }
  return pos;
}

}  // namespace added_vocabulary_impl

AddedToken AddedToken::from_json(const nlohmann::json& token, const std::string& source) {
  AddedToken out;
  try {
    out.id = json_integer(token.at("id"), fmt::format("{}: added token id", source));
    out.content = token.at("content").get<std::string>();
    out.single_word = token.value("single_word", false);
    out.lstrip = token.value("lstrip", false);
    out.rstrip = token.value("rstrip", false);
    out.special = token.value("special", false);
    out.normalized = token.value("normalized", !out.special);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed added_tokens entry {} ({})", source, token.dump(), e.what()));
  }
  if (out.id < 0) throw Error(fmt::format("{}: added token '{}' has a negative id", source, out.content));
  if (out.single_word)
    throw Error(fmt::format("{}: added token '{}' has single_word true, which is not supported",
                            source, out.content));
  return out;
}

nlohmann::json AddedToken::to_json() const {
  return {{"id", id},         {"content", content},       {"single_word", single_word}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
}

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) {
  for (auto& token : tokens)
    if (!token.content.empty()) tokens_.push_back(std::move(token));
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  by_first_byte_.resize(256);
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
}

std::vector<TextSegment> AddedTokenMatcher::split(const std::string& text, std::size_t begin,
                                                  std::size_t end) const {
  std::vector<TextSegment> out;
  std::size_t done = begin;  // end of the last match (HF's start_offset)
  for (std::size_t pos = begin; pos < end;) {
    const AddedToken* found = nullptr;
    for (const auto index : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      const auto& token = tokens_[index];
      if (token.content.size() <= end - pos && text.compare(pos, token.content.size(), token.content) == 0) {
        found = &token;
        break;  // longest first
      }
    }
    if (!found) {
      ++pos;
      continue;
    }
    std::size_t start = pos, stop = pos + found->content.size();
    if (found->lstrip) start = added_vocabulary_impl::strip_left(text, start, done);
    if (found->rstrip) stop = added_vocabulary_impl::strip_right(text, stop, end);
    if (start > done) out.push_back(TextSegment{done, start, -1});
    out.push_back(TextSegment{start, stop, found->id});
    done = pos = stop;
  }
  if (done < end) out.push_back(TextSegment{done, end, -1});
  return out;
}

void encode_with_added_tokens(
    const std::string& text, const AddedTokenMatcher& raw, const AddedTokenMatcher& normalized,
    const std::function<std::string(const std::string&)>& normalize,
    const std::function<void(const std::string& piece, bool at_start, std::vector<int64_t>& ids)>& plain,
    std::vector<int64_t>& ids) {
  for (const auto& segment : raw.split(text, 0, text.size())) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    const auto stretch = normalize(text.substr(segment.begin, segment.end - segment.begin));
    for (const auto& inner : normalized.split(stretch, 0, stretch.size())) {
      if (inner.id >= 0)
        ids.push_back(inner.id);
      else
        plain(stretch.substr(inner.begin, inner.end - inner.begin), segment.begin == 0 && inner.begin == 0, ids);
    }
  }
}

}  // namespace headprune::models
