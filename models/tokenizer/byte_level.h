// Byte-level text helpers of GPT-2-style BPE tokenizers (HF tokenizers `pre_tokenizers::
// byte_level`, OpenAI GPT-2 `encoder.py`): the reversible byte <-> printable-character map,
// UTF-8 validation and lossy decoding, Unicode White_Space, NFC.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace headprune::models {

/// GPT-2's bytes_to_unicode: byte b -> the UTF-8 of one printable character (the printable
/// Latin-1 bytes '!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves, the other 68 bytes in order
/// to U+0100, U+0101, ...: ' ' -> "Ġ", '\n' -> "Ċ").
const std::array<std::string, 256>& byte_to_unicode();

/// The inverse map: the byte a character stands for, or nothing for characters outside it.
std::optional<uint8_t> unicode_to_byte(char32_t c);

/// Each byte of `text` replaced by its byte_to_unicode character.
std::string bytes_to_unicode_text(const std::string& text);

/// Checks that `text` is UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
/// @throws headprune::Error "<who>: invalid UTF-8 at byte offset N ...".
void require_utf8(const std::string& text, const std::string& who);

/// `bytes` as UTF-8, each maximal invalid subsequence replaced by U+FFFD, exactly as Rust's
/// String::from_utf8_lossy (which HF tokenizers' decode uses).
std::string utf8_lossy(const std::string& bytes);

/// Decodes the UTF-8 character at `text[pos]` (valid UTF-8 assumed) into `c`; @returns its length.
std::size_t utf8_next(const std::string& text, std::size_t pos, char32_t& c);

/// Unicode White_Space (Rust char::is_whitespace): \t..\r, U+0085 and categories Zs, Zl, Zp.
bool is_white_space(char32_t c);

/// Unicode NFC of valid UTF-8 (utf8proc). @throws headprune::Error if utf8proc fails.
std::string nfc(const std::string& text);

}  // namespace headprune::models
