// The real stories260K model (../shared/data/stories260K) for the LLaMA tests.
#pragma once

#include <filesystem>
#include <fstream>

#include "models/formats/llama2c.h"
#include "models/formats/safetensors.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "tests/test_support.h"

namespace headprune::testing {

/// The folder holding stories260K.bin and tok512.bin; fails the test if it is absent.
inline std::filesystem::path stories_dir() { return shared_data_dir() / "stories260K"; }

/// stories260K converted to an HF-style folder in a fresh temporary folder (what
/// `convert-llama2c` writes): config.json, model.safetensors, tokenizer.bin.
inline std::filesystem::path converted_stories() {
  auto converted = models::read_llama2c(stories_dir() / "stories260K.bin");
  const auto dir = temp_dir("stories-hf");
  models::save_safetensors(dir / "model.safetensors", converted.weights);
  std::ofstream(dir / "config.json") << converted.config_json.dump(2);
  std::filesystem::copy_file(stories_dir() / "tok512.bin", dir / models::kLlama2cTokenizerFile);
  return dir;
}

}  // namespace headprune::testing
