// The interface between a family and llama.cpp's GGUF files: what a family's GgufCodec reads a
// file into and builds one from (implementations: models/<family>/*_gguf*; the drivers that look a
// codec up are in models/gguf_model.h, above the registry).
#pragma once

#include <cstdint>
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
  ModelConfig config;           ///< config_json parsed (ConfigReader)
  TensorMap weights;            ///< HF key names; quantised tensors dequantised to float32
  std::map<std::string, std::string> source_types;  ///< HF name -> ggml type in the file ("Q4_1")
};

/// One layer's attention heads and FFN width as llama.cpp holds them.
struct GgufLayerShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  /// For each written KV head, the layer's local KV head it copies (size n_head_kv).
  std::vector<int64_t> kv_source;
  /// FFN neurons written (feed_forward_length): the layer's width, or 1 zero neuron standing
  /// for an emptied FFN beside attention (llama.cpp's deci skips a layer with n_ff 0 whole).
  int64_t n_ff = 0;
};

/// A GGUF file built from a checkpoint, ready to write.
struct GgufExport {
  GgufWriter writer;
  std::string architecture;         ///< general.architecture ("llama", "deci", ...)
  bool per_layer_heads = false;     ///< head counts written per layer (arrays), not one for all
  bool per_layer_ffn = false;       ///< feed_forward_length written per layer (an array)
  std::vector<GgufLayerShape> layers;
  bool has_tokenizer = false;
  std::vector<std::string> warnings;  ///< e.g. duplicated K/V heads, no tokenizer
};

/// How a codec turns the config.json it made into a ModelConfig: the registry's read_config
/// (models/registry.h), handed down by read_gguf_model, since a file of one architecture may hold a
/// config of another family (a pruned Qwen2 written as llama.cpp's `llama`) and nothing under the
/// registry looks a family up.
using ConfigReader = ModelConfig (*)(const nlohmann::json& config_json, const std::string& source);

/// One family's mapping to and from llama.cpp's files (implementations: models/<family>/).
class GgufCodec {
 public:
  virtual ~GgufCodec() = default;
  /// The `general.architecture` values read() accepts ("llama").
  virtual std::vector<std::string> architectures() const = 0;
  /// Converts `file` (header read, architecture one of architectures()) to HF conventions, its
  /// config parsed by `read_config`.
  /// @throws headprune::Error naming the file and the key or tensor it cannot map exactly.
  virtual GgufModel read(GgufFile file, ConfigReader read_config) const = 0;
  /// The checks build() makes before looking at heads (what pruning cannot change).
  /// @throws headprune::Error saying why llama.cpp cannot run the checkpoint as written.
  virtual void check_exportable(const Checkpoint& checkpoint) const = 0;
  /// The GGUF file of `checkpoint` (check_exportable's checks included); `name` goes to
  /// general.name. @throws headprune::Error with the reason it cannot be written exactly.
  virtual GgufExport build(const Checkpoint& checkpoint, GgufExportType type, const std::string& name) const = 0;
};

}  // namespace headprune::models
