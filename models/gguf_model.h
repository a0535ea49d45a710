// llama.cpp GGUF model files, for any family that has a GGUF mapping: reading one into HF
// conventions (config.json + HF-named tensors) and writing a checkpoint as one. The rest of
// headprune calls these; each family's mapping (its names, metadata keys and head layout) is a
// GgufCodec (models/gguf_codec.h) in the family's folder (models/llama/llama_gguf.h), found through
// models/registry.h by `general.architecture` when reading and by the checkpoint's `model_type`
// when writing. Above the registry (docs/design.md, "Floors").
#pragma once

#include <filesystem>
#include <string>

#include "models/checkpoint.h"
#include "models/gguf_codec.h"

namespace headprune::models {

/// Reads `file` with the codec of its `general.architecture`.
/// @throws headprune::Error "GGUF file 'F': ..." on a format violation, a missing architecture,
///         one no family maps (the supported list given), or the codec's own refusals.
GgufModel read_gguf_model(const std::filesystem::path& file);

/// Refuses, before any work, a checkpoint that build_gguf could not write (commands that prune
/// first: `apply --gguf`, `prune --gguf`).
/// @throws headprune::Error: a family without a GGUF mapping, or the codec's reason.
void check_gguf_exportable(const Checkpoint& checkpoint);

/// The GGUF file of `checkpoint` by its family's codec; `name` defaults to the folder's name.
/// @throws headprune::Error as check_gguf_exportable, or the codec's reason.
GgufExport build_gguf(const Checkpoint& checkpoint, GgufExportType type, const std::string& name = "");

/// Checks, before any work, that `file` can receive an export: not a folder, in an existing
/// folder, new unless `force`. @throws headprune::Error saying what to change.
void check_gguf_target(const std::filesystem::path& file, bool force);

/// build_gguf, then written to `file` atomically after check_gguf_target.
GgufExport export_gguf(const Checkpoint& checkpoint, const std::filesystem::path& file, bool force,
                       GgufExportType type);

/// Where `--gguf` of apply and prune puts the file inside an exported folder.
inline constexpr const char* kGgufFolderFile = "model.gguf";

}  // namespace headprune::models
