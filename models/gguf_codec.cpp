#include "models/gguf_codec.h"

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {

GgufExportType parse_gguf_export_type(const std::string& name) {
  if (name == "f32") return GgufExportType::kF32;
  if (name == "f16") return GgufExportType::kF16;
  if (name == "q8_0") return GgufExportType::kQ8_0;
  throw UsageError(fmt::format("--type '{}' is not a GGUF type export-gguf writes: use f32, f16 or q8_0", name));
}

uint32_t gguf_file_type(GgufExportType type) {
  switch (type) {
    case GgufExportType::kF32: return 0;   // LLAMA_FTYPE_ALL_F32
    case GgufExportType::kF16: return 1;   // LLAMA_FTYPE_MOSTLY_F16
    case GgufExportType::kQ8_0: return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
  }
  return 0;
}

}  // namespace headprune::models
