// Fuzzes the --remove-heads JSON against a fixed BERT config (6 layers x 12 heads, layer 1's
// head 0 already removed).
#include <nlohmann/json.hpp>

#include "models/config.h"
#include "models/errors.h"
#include "models/registry.h"
#include "pruner/surgery/remove_heads_spec.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const headprune::models::ModelConfig& config() {
  static const auto c = headprune::models::read_config(
      nlohmann::json::parse(R"({"model_type": "bert", "vocab_size": 100, "hidden_size": 48,
        "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 96,
        "pruned_heads": {"1": [0]}})"),
      "config.json");
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::with_json(data, size, [](const nlohmann::json& j) {
    (void)headprune::pruner::parse_remove_heads(j, config());
  });
}
