// llama.cpp GGUF model files, for any family that has a GGUF mapping: reading one into HF
// conventions (config.json + HF-named tensors) and writing a checkpoint as one. The rest of
// headprune calls these; each family's mapping (its names, metadata keys and head layout) is a
// GgufCodec in the family's folder (models/llama/llama_gguf.h), found through models/registry.h
// by `general.architecture` when reading and by the checkpoint's `model_type` when writing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/checkpoint.h"
#include "models/config.h"
#include "models/formats/gguf.h"
#include "models/formats/gguf_writer.h"
#include "models/formats/safetensors.h"

namespace headprune::models {

/// How `export-gguf` stores the matrices (1-D norm weights are always F32, as llama.cpp's
/// converter does; Q8_0 falls back to F16 for rows that are not whole blocks of 32).
enum class GgufExportType { kF32, kF16, kQ8_0 };

/// "f32", "f16" or "q8_0". @throws headprune::UsageError naming the accepted values.
GgufExportType parse_gguf_export_type(const std::string& name);

/// llama.cpp's LLAMA_FTYPE of a file whose matrices are stored as `type` (general.file_type).
uint32_t gguf_file_type(GgufExportType type);

/// A GGUF model file converted to HF conventions.
struct GgufModel {
  GgufFile gguf;                ///< the header, for the tokenizer and chat template
  nlohmann::json config_json;   ///< an HF config.json of the family's HF class
  ModelConfig config;           ///< config_json parsed
  TensorMap weights;            ///< HF key names; quantised tensors dequantised to float32
  std::map<std::string, std::string> source_types;  ///< HF name -> ggml type in the file ("Q4_1")
};

/// One layer's attention heads as llama.cpp holds them.
struct GgufLayerHeads {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  /// For each written KV head, the layer's local KV head it copies (size n_head_kv).
  std::vector<int64_t> kv_source;
};

/// A GGUF file built from a checkpoint, ready to write.
struct GgufExport {
  GgufWriter writer;
  std::string architecture;         ///< general.architecture ("llama", "deci", ...)
  bool per_layer_heads = false;     ///< head counts written per layer (arrays), not one for all
  std::vector<GgufLayerHeads> layers;
  bool has_tokenizer = false;
  std::vector<std::string> warnings;  ///< e.g. duplicated K/V heads, no tokenizer
};

/// One family's mapping to and from llama.cpp's files (implementations: models/<family>/).
class GgufCodec {
 public:
  virtual ~GgufCodec() = default;
  /// The `general.architecture` values read() accepts ("llama").
  virtual std::vector<std::string> architectures() const = 0;
  /// Converts `file` (header read, architecture one of architectures()) to HF conventions.
  /// @throws headprune::Error naming the file and the key or tensor it cannot map exactly.
  virtual GgufModel read(GgufFile file) const = 0;
  /// The checks build() makes before looking at heads (what pruning cannot change).
  /// @throws headprune::Error saying why llama.cpp cannot run the checkpoint as written.
  virtual void check_exportable(const Checkpoint& checkpoint) const = 0;
  /// The GGUF file of `checkpoint` (check_exportable's checks included); `name` goes to
  /// general.name. @throws headprune::Error with the reason it cannot be written exactly.
  virtual GgufExport build(const Checkpoint& checkpoint, GgufExportType type, const std::string& name) const = 0;
};

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
