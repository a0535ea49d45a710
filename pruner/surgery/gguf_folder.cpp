#include "pruner/surgery/gguf_folder.h"

#include "models/llama/llama_gguf_export.h"
#include "pruner/log.h"

namespace headprune::pruner {

std::map<std::string, std::string> gguf_folder_files(const models::Checkpoint& checkpoint,
                                                     const std::filesystem::path& out) {
  auto name = out.filename().string();
  if (name.empty()) name = out.parent_path().filename().string();  // "out/p/"
  const auto gguf = models::llama::build_llama_gguf(checkpoint, models::llama::GgufExportType::kF32, name);
  for (const auto& warning : gguf.warnings) log::warn("{}: {}", models::llama::kGgufFolderFile, warning);
  return {{models::llama::kGgufFolderFile, gguf.writer.bytes()}};
}

}  // namespace headprune::pruner
