// Fuzzes the choice of tokenizer by tokenizer.json's model type for each family
// (models/tokenizer/tokenizer_from_json.h): the first input byte picks the checkpoint's
// model_type, the second what `model.type` is set to (BPE, Unigram, WordPiece, WordLevel, absent,
// a number, or as the file has it), the rest is tokenizer.json. A type the family does not use
// must be refused by name; one it uses must read the file or throw headprune::Error, never
// misread one model's sections as another's (a Unigram vocabulary labelled BPE, ...).
#include <array>

#include "models/config.h"
#include "models/errors.h"
#include "models/registry.h"
#include "models/tokenizer/tokenizer_from_json.h"
#include "models/tokenizer/wordpiece_json.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using headprune::models::ModelConfig;

/// A small config of each family whose tokenizer differs.
const std::array<ModelConfig, 5>& configs() {
  static const auto made = [] {
    std::array<ModelConfig, 5> out;
    const char* types[] = {"bert", "roberta", "xlm-roberta", "llama", "modernbert"};
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = headprune::models::read_config({{"model_type", types[i]}, {"vocab_size", 64}, {"hidden_size", 8},
                                               {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                                               {"intermediate_size", 16}, {"pad_token_id", 1}},
                                              "config.json");
    return out;
  }();
  return made;
}

/// `j` with model.type set as `choice` says (5 and above: left as it is).
nlohmann::json with_model_type(nlohmann::json j, uint8_t choice) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return j;
  const char* names[] = {"BPE", "Unigram", "WordPiece", "WordLevel"};
  if (choice < 4) j["model"]["type"] = names[choice];
  else if (choice == 4) j["model"].erase("type");
  else if (choice == 5) j["model"]["type"] = 7;
  return j;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto& config = configs()[data[0] % configs().size()];
  const uint8_t choice = data[1] % 8;
  return headprune::fuzz::with_json(data + 2, size - 2, [&](const nlohmann::json& file) {
    const auto j = with_model_type(file, choice);
    const auto tokenizer = headprune::models::tokenizer_from_json(j, nlohmann::json(), config, "tokenizer.json");
    if (tokenizer) {
      (void)tokenizer->encode("Hello, wörld 中文 😀", 64);
      return;
    }
    headprune::models::WordPieceOptions options;  // the family reads WordPiece: as the folder loader does
    auto vocab = headprune::models::wordpiece_from_tokenizer_json(j, "tokenizer.json", options);
    const headprune::models::WordPieceTokenizer wordpiece(std::move(vocab), options);
    (void)wordpiece.encode("Hello, unaffable world!", 16);
  });
}
