#include "models/model_size.h"

namespace headprune::models {

int64_t parameter_count(const AttentionModel& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

std::uintmax_t weights_file_bytes(const std::filesystem::path& dir) {
  if (std::filesystem::is_regular_file(dir)) return std::filesystem::file_size(dir);  // llama2.c .bin, .gguf
  std::uintmax_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") total += entry.file_size();
  return total;
}

}  // namespace headprune::models
