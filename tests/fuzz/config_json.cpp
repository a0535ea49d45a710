// Fuzzes config.json parsing (ModelConfig::from_json, the key allow-list, pruned_heads and the
// headprune record) and writing it back.
#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/errors.h"
#include "models/registry.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::with_json(data, size, [](const nlohmann::json& j) {
    const auto config = headprune::models::read_config(j, "config.json");
    (void)config.to_json().dump();
    (void)config.kept_kv_heads();
    (void)config.uniform_groups();
  });
}
