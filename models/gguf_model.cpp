#include "models/gguf_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "models/registry.h"

namespace headprune::models {
namespace {

/// The codec of the checkpoint's family. @throws headprune::Error if the family has none.
const GgufCodec& codec_of(const Checkpoint& checkpoint) {
  const auto& model_type = checkpoint.model->config().model_type;
  const auto* codec = gguf_codec_of(model_type);
  if (!codec)
    throw Error(fmt::format("export-gguf: {} is a '{}' model, which has no llama.cpp GGUF mapping here "
                            "(GGUF export writes: {})",
                            checkpoint.dir.string(), model_type, fmt::join(supported_gguf_architectures(), ", ")));
  return *codec;
}

}  // namespace

GgufModel read_gguf_model(const std::filesystem::path& file) {
  auto gguf = read_gguf(file);
  const auto* arch = gguf.header.find("general.architecture");
  if (!arch || arch->type != GgufValueType::STRING)
    gguf_error(gguf.path, "metadata 'general.architecture' is missing: not a llama.cpp model file");
  const auto name = arch->value.get<std::string>();
  const auto* codec = gguf_codec_for_architecture(name);
  if (!codec)
    gguf_error(gguf.path, fmt::format("architecture '{}' is not supported (supported: {}; models of other "
                                      "architectures are not mapped)",
                                      name, fmt::join(supported_gguf_architectures(), ", ")));
  return codec->read(std::move(gguf), read_config);
}

void check_gguf_exportable(const Checkpoint& checkpoint) { codec_of(checkpoint).check_exportable(checkpoint); }

GgufExport build_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name) {
  return codec_of(checkpoint).build(checkpoint, type, name.empty() ? checkpoint.dir.filename().string() : name);
}

void check_gguf_target(const std::filesystem::path& file, bool force) {
  namespace fs = std::filesystem;
  if (fs::is_directory(file))
    throw Error(fmt::format("export-gguf: '{}' is a folder; give the .gguf file to write", file.string()));
  const auto parent = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!fs::is_directory(parent))
    throw Error(fmt::format("export-gguf: the folder '{}' does not exist; create it first", parent.string()));
  if (fs::exists(file) && !force)
    throw Error(fmt::format("export-gguf: '{}' exists; add --force to replace it", file.string()));
}

GgufExport export_gguf(const Checkpoint& checkpoint, const std::filesystem::path& file, bool force,
                       GgufExportType type) {
  check_gguf_target(file, force);
  auto out = build_gguf(checkpoint, type);
  out.writer.write_file(file);
  return out;
}

}  // namespace headprune::models
