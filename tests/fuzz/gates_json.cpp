// Fuzzes reading gates.json (GateState::from_json) and writing it back.
#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "pruner/records/gate_record.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::with_json(data, size, [](const nlohmann::json& j) {
    const auto state = headprune::pruner::GateState::from_json(j, "gates.json");
    (void)state.to_json().dump();
    (void)state.heads_kept();
  });
}
