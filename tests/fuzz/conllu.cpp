// Fuzzes the CoNLL-U reader of `headprune heads` (pruner/analysis/conllu.h): any bytes in,
// sentences whose IDs run 1..n with every HEAD in 0..n, or a headprune::Error out.
#include <cstdlib>

#include "pruner/analysis/conllu.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return headprune::fuzz::expecting_errors([&] {
    for (const auto& s : headprune::pruner::parse_conllu(headprune::fuzz::as_string(data, size), "input.conllu"))
      for (const auto& w : s.words)
        if (w.head < 0 || w.head > static_cast<int64_t>(s.words.size()) || w.form.empty()) std::abort();
  });
}
