// Integer ids written as JSON object keys ("3": ...), as HF writes layers and labels.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace headprune::models {

/// The whole of `text` as a decimal integer ("12", "-1"), or nullopt if it is anything else
/// ("", "1a", " 1", "1.0", out of int64 range).
inline std::optional<int64_t> parse_integer_key(const std::string& text) {
  try {
    size_t used = 0;
    const auto value = std::stoll(text, &used);
    if (used == text.size() && !text.empty() && text.front() != ' ' && text.front() != '+')
      return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace headprune::models
