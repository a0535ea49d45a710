// Shared by the libFuzzer harnesses (tests/fuzz/README.md): each parser must either succeed or
// throw headprune::Error; any other exception, crash, leak or undefined behaviour is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "models/errors.h"

namespace headprune::fuzz {

inline std::string as_string(const uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// Runs `parse`; headprune::Error is an expected outcome, anything else escapes to libFuzzer.
/// @returns 0, libFuzzer's "keep going".
template <typename Parse>
int expecting_errors(Parse&& parse) {
  try {
    parse();
  } catch (const Error&) {
  }
  return 0;
}

/// The input as JSON, handed to `use` (under expecting_errors); input that is not JSON is
/// skipped: the JSON library itself is not under test.
template <typename Use>
int with_json(const uint8_t* data, std::size_t size, Use&& use) {
  const auto j = nlohmann::json::parse(as_string(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  return expecting_errors([&] { use(j); });
}

}  // namespace headprune::fuzz
