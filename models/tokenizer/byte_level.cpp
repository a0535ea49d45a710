#include "models/tokenizer/byte_level.h"

#include <utf8proc.h>

#include <cstdlib>
#include <unordered_map>

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {
namespace byte_level_impl {

std::string utf8_of(char32_t c) {
  utf8proc_uint8_t buffer[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::unordered_map<char32_t, uint8_t> to_byte;
  Tables() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      to_unicode[static_cast<std::size_t>(b)] = utf8_of(c);
      to_byte[c] = static_cast<uint8_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

/// Length of the valid UTF-8 prefix at bytes[pos] (1..4) and whether it is a whole character.
std::pair<std::size_t, bool> utf8_prefix(const std::string& bytes, std::size_t pos) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return {1, true};
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  std::size_t n = 1;
  for (; n <= need; ++n) {
    if (pos + n >= bytes.size()) return {n, false};
    const unsigned char c = byte(pos + n);
    if (c < (n == 1 ? lo : 0x80) || c > (n == 1 ? hi : 0xBF)) return {n, false};
  }
  return {n, true};
}

}  // namespace byte_level_impl

const std::array<std::string, 256>& byte_to_unicode() { return byte_level_impl::tables().to_unicode; }

std::optional<uint8_t> unicode_to_byte(char32_t c) {
  const auto& map = byte_level_impl::tables().to_byte;
  const auto it = map.find(c);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

std::string bytes_to_unicode_text(const std::string& text) {
  const auto& map = byte_to_unicode();
  std::string out;
  out.reserve(text.size() * 2);
  for (const char b : text) out += map[static_cast<unsigned char>(b)];
  return out;
}

void require_utf8(const std::string& text, const std::string& who) {
  for (std::size_t pos = 0; pos < text.size();) {
    const auto [n, whole] = byte_level_impl::utf8_prefix(text, pos);
    if (!whole)
      throw Error(fmt::format("{}: invalid UTF-8 at byte offset {} (byte 0x{:02X}); the text must be UTF-8",
                              who, pos, static_cast<unsigned char>(text[pos])));
    pos += n;
  }
}

std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t pos = 0; pos < bytes.size();) {
    const auto [n, whole] = byte_level_impl::utf8_prefix(bytes, pos);
    out += whole ? bytes.substr(pos, n) : std::string("\xEF\xBF\xBD");
    pos += n;
  }
  return out;
}

std::size_t utf8_next(const std::string& text, std::size_t pos, char32_t& c) {
  utf8proc_int32_t code = 0;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + pos),
                                  static_cast<utf8proc_ssize_t>(text.size() - pos), &code);
  if (n <= 0) throw Error(fmt::format("invalid UTF-8 at byte offset {}", pos));
  c = static_cast<char32_t>(code);
  return static_cast<std::size_t>(n);
}

bool is_white_space(char32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || c == 0x85) return true;
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ZS || category == UTF8PROC_CATEGORY_ZL ||
         category == UTF8PROC_CATEGORY_ZP;
}

std::string nfc(const std::string& text) {
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                              static_cast<utf8proc_ssize_t>(text.size()), &out,
                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) throw Error(fmt::format("NFC normalizer: {}", utf8proc_errmsg(n)));
  std::string result(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return result;
}

}  // namespace headprune::models
