// Shared by the libFuzzer harnesses (tests/fuzz/README.md): each parser must either succeed or
// throw headprune::Error; any other exception, crash, leak or undefined behaviour is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace headprune::fuzz {

inline std::string as_string(const uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace headprune::fuzz
