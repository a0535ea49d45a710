#include "models/tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/tokenizer_json_sections.h"

namespace headprune::models {

namespace bpe_tokenizer_impl {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}

/// The byte of a ByteFallback token "<0xXX>" (HF `decoders::ByteFallback`), or -1.
int fallback_byte(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token.back() != '>') return -1;
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/// HF ByteLevel decoder of one token: each character back to its byte, or the token's own UTF-8
/// when a character is outside the byte map (an added token such as "<|im_start|>").
std::string byte_level_token(const std::string& text) {
  std::string mapped;
  for (std::size_t pos = 0; pos < text.size();) {
    char32_t c = 0;
    pos += utf8_next(text, pos, c);
    const auto byte = unicode_to_byte(c);
    if (!byte) return text;
    mapped += static_cast<char>(*byte);
  }
  return mapped;
}

/// HF Sequence[Replace("▁", " "), ByteFallback, Fuse] over the tokens.
std::string byte_fallback_tokens(const std::vector<const std::string*>& tokens) {
  std::string out, bytes;
  const auto flush = [&] {
    if (bytes.empty()) return;
    if (utf8_lossy(bytes) == bytes) {  // valid UTF-8
      out += bytes;
    } else {
      for (std::size_t i = 0; i < bytes.size(); ++i) out += "\xEF\xBF\xBD";  // one U+FFFD per byte
    }
    bytes.clear();
  };
  for (const auto* token : tokens) {
    const auto text = replace_all(*token, kMetaspace, " ");
    if (const int byte = fallback_byte(text); byte >= 0) {
      bytes += static_cast<char>(byte);
      continue;
    }
    flush();
    out += text;
  }
  flush();
  return out;
}

}  // namespace bpe_tokenizer_impl

BpeTokenizer::BpeTokenizer(BpeModel model, BpePreTokenizer pre_tokenizer, BpeNormalizer normalizer,
                           BpeDecoder decoder, std::vector<AddedToken> added, const std::string& source)
    : model_(std::move(model)),
      pre_tokenizer_(std::move(pre_tokenizer)),
      normalizer_(normalizer),
      decoder_(decoder),
      added_(std::move(added)) {
  if ((decoder_ == BpeDecoder::kByteLevel) != pre_tokenizer_.byte_level())
    throw Error(fmt::format("{}: the {} decoder does not fit a pre_tokenizer {} ByteLevel (supported: ByteLevel "
                            "with ByteLevel, ByteFallback without)",
                            source, decoder_ == BpeDecoder::kByteLevel ? "ByteLevel" : "ByteFallback",
                            pre_tokenizer_.byte_level() ? "ending in" : "without"));
  std::vector<AddedToken> raw, normalized;
  for (std::size_t i = 0; i < added_.size(); ++i) {
    const auto& token = added_[i];
    if (token.normalized && normalizer_ != BpeNormalizer::kNone && normalizer_ != BpeNormalizer::kNfc &&
        token.content.find(' ') != std::string::npos)
      throw Error(fmt::format("{}: added token '{}' is normalized and contains a space (not supported with the "
                              "Replace normalizer)",
                              source, token.content));
    added_index_.emplace(token.id, i);
    if (token.special) special_contents_.insert(token.content);
    (token.normalized ? normalized : raw).push_back(token);  // two passes, as HF, even without a normalizer
  }
  raw_matcher_ = AddedTokenMatcher(std::move(raw));
  normalized_matcher_ = AddedTokenMatcher(std::move(normalized));
}

std::string BpeTokenizer::metaspace_piece(const std::string& text, bool at_start) const {
  if (metaspace_ == BpeMetaspace::kNone) return text;
  auto piece = bpe_tokenizer_impl::replace_all(text, " ", kMetaspace);
  const bool prepend = metaspace_ == BpeMetaspace::kAlways || (metaspace_ == BpeMetaspace::kFirst && at_start);
  if (prepend && piece.rfind(kMetaspace, 0) != 0) piece = kMetaspace + piece;
  return piece;
}

void BpeTokenizer::append_plain_ids(const std::string& text, bool at_start, std::vector<int64_t>& out) const {
  for (const auto& word : pre_tokenizer_.pre_tokenize(metaspace_piece(text, at_start))) model_.encode_word(word, out);
}

std::vector<int64_t> BpeTokenizer::prompt_ids(const std::string& text) const {
  auto ids = prefix_ids_;
  const auto body = encode_text(text, false);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::vector<int64_t> BpeTokenizer::end_of_text_ids() const {
  return eos_id_ ? std::vector<int64_t>{*eos_id_} : std::vector<int64_t>{};
}

std::vector<int64_t> BpeTokenizer::encode_text(const std::string& text, bool add_special_tokens) const {
  require_utf8(text, "BPE tokenizer");
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = prefix_ids_;
  encode_with_added_tokens(
      text, raw_matcher_, normalized_matcher_, [this](const std::string& t) { return normalize(t); },
      [this](const std::string& piece, bool at_start, std::vector<int64_t>& out) { append_plain_ids(piece, at_start, out); },
      ids);
  if (add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text, std::size_t max_length) const {
  return truncate_and_frame(encode_text(text, false), prefix_ids_, suffix_ids_, max_length, "BPE tokenizer");
}

std::vector<std::string> BpeTokenizer::pre_tokenize(const std::string& text) const {
  require_utf8(text, "BPE tokenizer");
  return pre_tokenizer_.pre_tokenize(metaspace_piece(normalize(text), true));
}

std::string BpeTokenizer::normalize(const std::string& text) const {
  switch (normalizer_) {
    case BpeNormalizer::kNfc:
      return nfc(text);
    case BpeNormalizer::kSpaceToMetaspace:
      return bpe_tokenizer_impl::replace_all(text, " ", kMetaspace);
    case BpeNormalizer::kPrependSpaceToMetaspace:
      return text.empty() ? text : kMetaspace + bpe_tokenizer_impl::replace_all(text, " ", kMetaspace);
    case BpeNormalizer::kNone:
      break;
  }
  return text;
}

const AddedToken* BpeTokenizer::added_token(int64_t id) const {
  const auto it = added_index_.find(id);
  return it == added_index_.end() ? nullptr : &added_[it->second];
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<const std::string*> tokens;
  tokens.reserve(ids.size());
  for (const auto id : ids) {
    const auto* added = added_token(id);
    const std::string* text = added ? &added->content : model_.id_to_token(id);
    if (!text) continue;  // HF skips ids it has no token for
    if (skip_special_tokens && special_contents_.count(*text)) continue;  // HF compares contents
    tokens.push_back(text);
  }
  return decode_tokens(tokens);
}

std::string BpeTokenizer::decode_tokens(const std::vector<const std::string*>& tokens) const {
  if (decoder_ == BpeDecoder::kByteFallback) return bpe_tokenizer_impl::byte_fallback_tokens(tokens);
  if (decoder_ == BpeDecoder::kByteFallbackStrip) {  // Strip(" ", 1, 0) on the fused text
    auto text = bpe_tokenizer_impl::byte_fallback_tokens(tokens);
    return text.rfind(' ', 0) == 0 ? text.substr(1) : text;
  }
  std::string bytes;
  for (const auto* token : tokens) bytes += bpe_tokenizer_impl::byte_level_token(*token);
  return utf8_lossy(bytes);
}

int64_t BpeTokenizer::pad_id() const {
  if (pad_id_) return *pad_id_;
  if (eos_id_) return *eos_id_;
  return 0;
}

std::string BpeTokenizer::token_text(int64_t id) const {
  if (const auto* added = added_token(id)) return added->content;
  if (const auto* token = model_.id_to_token(id)) return *token;
  throw Error(fmt::format("BPE tokenizer: no token has id {} (vocabulary size {})", id, vocab_size()));
}

bool BpeTokenizer::is_special(int64_t id) const {
  const auto* added = added_token(id);
  return added && added->special;
}

std::optional<int64_t> BpeTokenizer::token_to_id(const std::string& token) const {
  for (const auto& added : added_)
    if (added.content == token) return added.id;
  return model_.token_to_id(token);
}

int64_t BpeTokenizer::vocab_size() const {
  int64_t bound = model_.id_bound();
  for (const auto& token : added_) bound = std::max(bound, token.id + 1);
  return bound;
}

}  // namespace headprune::models
