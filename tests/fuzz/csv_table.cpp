// Fuzzes the CSV reader used for Hugging Face STS files (pruner/measure/csv_table.h, libcsv):
// any bytes in, records or a headprune::Error out.
#include "models/errors.h"
#include "pruner/measure/csv_table.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::expecting_errors([&] {
    (void)headprune::pruner::parse_csv(headprune::fuzz::as_string(data, size), "input.csv");
  });
}
