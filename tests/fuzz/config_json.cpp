// Fuzzes config.json parsing (ModelConfig::from_json, the key allow-list, pruned_heads and the
// headprune record) and writing it back.
#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/errors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(headprune::fuzz::as_string(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const auto config = headprune::models::ModelConfig::from_json(j, "config.json");
    (void)config.to_json().dump();
    (void)config.kept_kv_heads();
    (void)config.uniform_groups();
  } catch (const headprune::Error&) {
  }
  return 0;
}
