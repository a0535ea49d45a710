#include "models/tokenizer/tokenizer.h"

#include "models/errors.h"

namespace headprune::models {
namespace {

[[noreturn]] void no_generation() {
  throw Error("this model's tokenizer (WordPiece) is not a causal language model's: generation needs a "
              "LLaMA-family tokenizer (llama2.c or byte-level BPE)");
}

}  // namespace

std::vector<int64_t> Tokenizer::prompt_ids(const std::string&) const { no_generation(); }

std::string Tokenizer::generated_text(const std::vector<int64_t>&) const { no_generation(); }

}  // namespace headprune::models
