#include "models/tokenizer/byte_level_bpe.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/tokenizer/byte_level.h"

namespace headprune::models {

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(BpeModel model, BytePreTokenizer pre_tokenizer, bool nfc,
                                             std::vector<AddedToken> added)
    : model_(std::move(model)), pre_tokenizer_(std::move(pre_tokenizer)), nfc_(nfc), added_(std::move(added)) {
  std::vector<AddedToken> raw, normalized;
  for (std::size_t i = 0; i < added_.size(); ++i) {
    const auto& token = added_[i];
    added_index_.emplace(token.id, i);
    if (token.special) special_contents_.insert(token.content);
    (token.normalized ? normalized : raw).push_back(token);  // two passes, as HF, even without a normalizer
  }
  raw_matcher_ = AddedTokenMatcher(std::move(raw));
  normalized_matcher_ = AddedTokenMatcher(std::move(normalized));
}

void ByteLevelBpeTokenizer::append_plain_ids(const std::string& text, std::vector<int64_t>& out) const {
  for (const auto& word : pre_tokenizer_.pre_tokenize(text)) model_.encode_word(word, out);
}

std::vector<int64_t> ByteLevelBpeTokenizer::prompt_ids(const std::string& text) const {
  auto ids = prefix_ids_;
  const auto body = encode_text(text, false);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::vector<int64_t> ByteLevelBpeTokenizer::end_of_text_ids() const {
  return eos_id_ ? std::vector<int64_t>{*eos_id_} : std::vector<int64_t>{};
}

std::vector<int64_t> ByteLevelBpeTokenizer::encode_text(const std::string& text, bool add_special_tokens) const {
  require_utf8(text, "byte-level BPE tokenizer");
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = prefix_ids_;
  for (const auto& segment : raw_matcher_.split(text, 0, text.size())) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    const auto plain = text.substr(segment.begin, segment.end - segment.begin);
    const auto normalized = nfc_ ? nfc(plain) : plain;
    for (const auto& inner : normalized_matcher_.split(normalized, 0, normalized.size())) {
      if (inner.id >= 0)
        ids.push_back(inner.id);
      else
        append_plain_ids(normalized.substr(inner.begin, inner.end - inner.begin), ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::vector<int64_t> ByteLevelBpeTokenizer::encode(const std::string& text, std::size_t max_length) const {
  const auto added = prefix_ids_.size() + suffix_ids_.size();
  if (max_length < added || max_length == 0)
    throw Error(fmt::format("byte-level BPE tokenizer: max_length {} leaves no room for the text "
                            "(the tokenizer adds {} special token(s))",
                            max_length, added));
  auto ids = encode_text(text, false);
  if (ids.size() > max_length - added) ids.resize(max_length - added);
  ids.insert(ids.begin(), prefix_ids_.begin(), prefix_ids_.end());
  ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::vector<std::string> ByteLevelBpeTokenizer::pre_tokenize(const std::string& text) const {
  require_utf8(text, "byte-level BPE tokenizer");
  return pre_tokenizer_.pre_tokenize(nfc_ ? nfc(text) : text);
}

const AddedToken* ByteLevelBpeTokenizer::added_token(int64_t id) const {
  const auto it = added_index_.find(id);
  return it == added_index_.end() ? nullptr : &added_[it->second];
}

std::string ByteLevelBpeTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::string bytes;
  for (const auto id : ids) {
    const auto* added = added_token(id);
    const std::string* text = added ? &added->content : model_.id_to_token(id);
    if (!text) continue;  // HF skips ids it has no token for
    if (skip_special_tokens && special_contents_.count(*text)) continue;  // HF compares contents
    // ByteLevel decoder: each character back to its byte; a token with a character outside the
    // map (e.g. an added token "<|im_start|>" is fine, "é" is not) contributes its own UTF-8.
    std::string mapped;
    bool all_mapped = true;
    for (std::size_t pos = 0; pos < text->size() && all_mapped;) {
      char32_t c = 0;
      pos += utf8_next(*text, pos, c);
      const auto byte = unicode_to_byte(c);
      if (byte)
        mapped += static_cast<char>(*byte);
      else
        all_mapped = false;
    }
    bytes += all_mapped ? mapped : *text;
  }
  return utf8_lossy(bytes);
}

int64_t ByteLevelBpeTokenizer::pad_id() const {
  if (pad_id_) return *pad_id_;
  if (eos_id_) return *eos_id_;
  return 0;
}

std::string ByteLevelBpeTokenizer::token_text(int64_t id) const {
  if (const auto* added = added_token(id)) return added->content;
  if (const auto* token = model_.id_to_token(id)) return *token;
  throw Error(fmt::format("byte-level BPE tokenizer: no token has id {} (vocabulary size {})", id, vocab_size()));
}

bool ByteLevelBpeTokenizer::is_special(int64_t id) const {
  const auto* added = added_token(id);
  return added && added->special;
}

std::optional<int64_t> ByteLevelBpeTokenizer::token_to_id(const std::string& token) const {
  for (const auto& added : added_)
    if (added.content == token) return added.id;
  return model_.token_to_id(token);
}

int64_t ByteLevelBpeTokenizer::vocab_size() const {
  int64_t bound = model_.id_bound();
  for (const auto& token : added_) bound = std::max(bound, token.id + 1);
  return bound;
}

}  // namespace headprune::models
