// `model.gguf` inside folders written by `apply --gguf` / `prune --gguf`: the pruned LLaMA model
// as a llama.cpp GGUF file (models/gguf_model.h), F32.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// {"model.gguf": the GGUF bytes of `checkpoint`} (F32; general.name = `out`'s folder name),
/// for a folder build's late files. Logs build_gguf's warnings (duplicated K/V heads, no
/// tokenizer). @throws headprune::Error with build_gguf's reason when llama.cpp cannot
/// hold the model exactly (the folder is then not written).
std::map<std::string, std::string> gguf_folder_files(const models::Checkpoint& checkpoint,
                                                     const std::filesystem::path& out);

}  // namespace headprune::pruner
