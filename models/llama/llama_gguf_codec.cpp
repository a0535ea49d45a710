// The LLaMA family's GgufCodec (models/gguf_codec.h): llama_gguf.h reads, llama_gguf_export.h
// writes.
#include "models/llama/llama_family.h"
#include "models/llama/llama_gguf.h"
#include "models/llama/llama_gguf_export.h"

namespace headprune::models::llama {
namespace {

class LlamaGgufCodec final : public GgufCodec {
 public:
  std::vector<std::string> architectures() const override { return {"llama"}; }
  GgufModel read(GgufFile file, ConfigReader read_config) const override {
    return read_llama_gguf(std::move(file), read_config);
  }
  void check_exportable(const Checkpoint& checkpoint) const override { check_llama_gguf_exportable(checkpoint); }
  GgufExport build(const Checkpoint& checkpoint, GgufExportType type, const std::string& name) const override {
    return build_llama_gguf(checkpoint, type, name);
  }
};

}  // namespace

const GgufCodec& gguf_codec() {
  static const LlamaGgufCodec codec;
  return codec;
}

}  // namespace headprune::models::llama
