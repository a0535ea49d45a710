#include "models/tokenizer/precompiled_charsmap.h"

#include <algorithm>

#include <boost/archive/iterators/binary_from_base64.hpp>
#include <boost/archive/iterators/transform_width.hpp>
#include <fmt/format.h>
#include <utf8proc.h>

#include "models/errors.h"
#include "models/tokenizer/byte_level.h"

namespace headprune::models {
namespace {

/// The bytes `text` encodes in standard base64 (RFC 4648 alphabet, '=' padding).
/// @throws headprune::Error naming `source` on any other character or a bad length.
std::string decode_base64(std::string text, const std::string& source) {
  const auto padding = text.size() - std::min(text.find_last_not_of('=') + 1, text.size());
  if (text.size() % 4 != 0 || padding > 2)
    throw Error(fmt::format("{}: precompiled_charsmap is not base64 (length {}, {} '=')", source, text.size(),
                            padding));
  text.resize(text.size() - padding);
  const auto bad = std::find_if_not(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
  });
  if (bad != text.end())
    throw Error(fmt::format("{}: precompiled_charsmap is not base64 (character at offset {})", source,
                            bad - text.begin()));
  namespace it = boost::archive::iterators;
  using Decoder = it::transform_width<it::binary_from_base64<std::string::const_iterator>, 8, 6>;
  std::string bytes(Decoder(text.cbegin()), Decoder(text.cend()));
  bytes.resize(text.size() * 3 / 4);  // the last group's spare bits are not a byte
  return bytes;
}

uint32_t read_u32_le(const std::string& blob, std::size_t pos) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(blob[pos + static_cast<std::size_t>(i)]);
  return v;
}

// Darts-clone DoubleArrayUnit (darts.h): label in bits 0-7 (bit 31 marks a leaf unit's value),
// has_leaf in bit 8, the offset in bits 10-31 scaled by 2^8 when bit 9 is set.
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1U) == 1U; }
uint32_t value(uint32_t unit) { return unit & ((1U << 31) - 1); }
uint32_t label(uint32_t unit) { return unit & ((1U << 31) | 0xFFU); }
uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1U << 9)) >> 6); }

/// The extended grapheme clusters of valid UTF-8 `text` (UAX #29, utf8proc), as views.
std::vector<std::string_view> graphemes(std::string_view text) {
  std::vector<std::string_view> out;
  utf8proc_int32_t state = 0, previous = -1;
  std::size_t start = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    utf8proc_int32_t c = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + pos),
                                    static_cast<utf8proc_ssize_t>(text.size() - pos), &c);
    if (n <= 0) throw Error("precompiled normalizer: invalid UTF-8");
    if (previous >= 0 && utf8proc_grapheme_break_stateful(previous, c, &state)) {
      out.push_back(text.substr(start, pos - start));
      start = pos;
    }
    previous = c;
    pos += static_cast<std::size_t>(n);
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

}  // namespace

PrecompiledCharsmap PrecompiledCharsmap::from_base64(const std::string& text, const std::string& source) {
  return PrecompiledCharsmap(decode_base64(text, source), source);
}

PrecompiledCharsmap::PrecompiledCharsmap(const std::string& blob, const std::string& source) : source_(source) {
  if (blob.size() < 4)
    throw Error(fmt::format("{}: precompiled_charsmap of {} bytes has no trie size", source, blob.size()));
  const auto trie_bytes = read_u32_le(blob, 0);
  if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4)
    throw Error(fmt::format("{}: precompiled_charsmap trie size {} does not fit its {} bytes (a positive "
                            "multiple of 4 is needed)",
                            source, trie_bytes, blob.size() - 4));
  units_.resize(trie_bytes / 4);
  for (std::size_t i = 0; i < units_.size(); ++i) units_[i] = read_u32_le(blob, 4 + 4 * i);
  normalized_ = blob.substr(4 + trie_bytes);
  require_utf8(normalized_, source + ": precompiled_charsmap replacements");
}

uint32_t PrecompiledCharsmap::unit(std::size_t pos) const {
  if (pos >= units_.size())
    throw Error(fmt::format("{}: precompiled_charsmap is corrupt (trie index {} past its {} units)", source_, pos,
                            units_.size()));
  return units_[pos];
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  // Darts-clone commonPrefixSearch, stopped at the first (shortest) key found.
  std::size_t node = offset(unit(0));
  for (const char ch : chunk) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte == 0) break;  // the key ends at a NUL, as Darts' C strings do
    node ^= byte;
    const auto u = unit(node);
    if (label(u) != byte) return std::nullopt;
    node ^= offset(u);
    if (has_leaf(u)) {
      const auto start = value(unit(node));
      if (start >= normalized_.size())
        throw Error(fmt::format("{}: precompiled_charsmap is corrupt (replacement offset {} past its {} bytes)",
                                source_, start, normalized_.size()));
      if ((static_cast<unsigned char>(normalized_[start]) & 0xC0U) == 0x80U)
        throw Error(fmt::format("{}: precompiled_charsmap is corrupt (replacement offset {} inside a character)",
                                source_, start));
      const auto end = normalized_.find('\0', start);
      return std::string_view(normalized_).substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
  }
  return std::nullopt;
}

void PrecompiledCharsmap::append_transformed(std::string_view chunk, std::string& out) const {
  const auto replacement = transform(chunk);
  out += replacement ? *replacement : chunk;
}

std::string PrecompiledCharsmap::normalize(const std::string& text) const {
  std::string out;
  out.reserve(text.size());
  for (const auto grapheme : graphemes(text)) {
    if (grapheme.size() < 6) {
      if (const auto replacement = transform(grapheme)) {
        out += *replacement;
        continue;
      }
    }
    for (std::size_t pos = 0; pos < grapheme.size();) {
      std::size_t n = 1;
      while (pos + n < grapheme.size() && (static_cast<unsigned char>(grapheme[pos + n]) & 0xC0U) == 0x80U) ++n;
      append_transformed(grapheme.substr(pos, n), out);
      pos += n;
    }
  }
  return out;
}

}  // namespace headprune::models
