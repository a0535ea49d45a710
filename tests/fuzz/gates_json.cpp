// Fuzzes reading gates.json (GateState::from_json) and writing it back.
#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "pruner/gate_record.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(headprune::fuzz::as_string(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const auto state = headprune::pruner::GateState::from_json(j, "gates.json");
    (void)state.to_json().dump();
    (void)state.heads_kept();
  } catch (const headprune::Error&) {
  }
  return 0;
}
