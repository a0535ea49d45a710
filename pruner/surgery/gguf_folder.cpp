#include "pruner/surgery/gguf_folder.h"

#include "models/gguf_model.h"
#include "pruner/log.h"

namespace headprune::pruner {

std::map<std::string, std::string> gguf_folder_files(const models::Checkpoint& checkpoint,
                                                     const std::filesystem::path& out) {
  auto name = out.filename().string();
  if (name.empty()) name = out.parent_path().filename().string();  // "out/p/"
  const auto gguf = models::build_gguf(checkpoint, models::GgufExportType::kF32, name);
  for (const auto& warning : gguf.warnings) log::warn("{}: {}", models::kGgufFolderFile, warning);
  return {{models::kGgufFolderFile, gguf.writer.bytes()}};
}

}  // namespace headprune::pruner
