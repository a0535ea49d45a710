#include "pruner/training/memory_fit.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/registry.h"

namespace headprune::pruner {
namespace {

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

/// Bytes of one tensor as held: a matrix in the file's dtype when kept narrow, else at least float32.
int64_t held_bytes(const models::SafetensorsEntry& e, int64_t numel, bool keep_matrices) {
  const auto itemsize = static_cast<int64_t>(e.dtype->itemsize);
  const bool floating = std::string(e.dtype->name).front() == 'F' || std::string(e.dtype->name) == "BF16";
  if (!floating) return numel * itemsize;
  if (keep_matrices && e.shape.size() == 2) return numel * itemsize;
  return numel * std::max<int64_t>(itemsize, 4);
}

}  // namespace

std::optional<MemoryNeed> gate_training_memory_need(const std::filesystem::path& model, const GateTrainingOptions& o,
                                                    int64_t batch_tokens) {
  if (!std::filesystem::is_directory(model)) return std::nullopt;
  const auto config = models::read_config_file(model);
  const bool keep = o.weight_storage() == models::WeightStorage::source;
  int64_t held = 0, parameters = 0;
  for (const auto& file : models::checkpoint_weight_files(model))
    for (const auto& e : models::read_safetensors_header(file).entries) {
      int64_t numel = 1;
      for (auto d : e.shape) numel *= d;
      held += held_bytes(e, numel, keep);
      parameters += numel;
    }
  MemoryNeed need;
  need.batch_tokens = batch_tokens;
  need.weights = o.train_weights ? held + 4 * parameters : held;
  need.weight_training = o.train_weights ? 12 * parameters : 0;
  // Checkpointed layers keep their input alone, and one layer at a time is recomputed.
  const bool checkpointed = GateTrainingOptions::checkpoints(o.checkpoint_layers, parameters);
  const int64_t per_token = checkpointed ? config.num_hidden_layers * config.hidden_size + config.hidden_size +
                                               config.intermediate_size
                                         : config.num_hidden_layers * (config.hidden_size + config.intermediate_size);
  need.activations = batch_tokens * per_token * 4;
  return need;
}

std::optional<int64_t> available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  if (!meminfo) return std::nullopt;
  int64_t total = 0;
  bool found = false;
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "MemAvailable:" || key == "SwapFree:") {
      total += kib * 1024;
      found = found || key == "MemAvailable:";
    }
  }
  return found ? std::optional<int64_t>(total) : std::nullopt;
}

std::string cannot_fit_reason(const MemoryNeed& need, int64_t available, const GateTrainingOptions& o) {
  if (need.total() <= available) return "";
  std::string help = "lower --batch-size or --max-length (activations grow with their product)";
  if (o.train_weights) help += ", or leave out --train-weights (gates alone keep the weights frozen)";
  if (o.float32_weights) help += ", or leave out --float32-weights (a bfloat16 checkpoint's matrices then stay bfloat16)";
  return fmt::format("gate training needs at least {:.1f} GiB (weights {:.1f} GiB{}, activations {:.1f} GiB for {} "
                     "tokens per step), but {:.1f} GiB of memory is available: {}",
                     gib(need.total()), gib(need.weights),
                     o.train_weights ? fmt::format(", gradients and AdamW state {:.1f} GiB", gib(need.weight_training))
                                     : std::string(),
                     gib(need.activations), need.batch_tokens, gib(available), help);
}

void refuse_if_it_cannot_fit(const std::filesystem::path& model, const GateTrainingOptions& o, int64_t batch_tokens) {
  const auto need = gate_training_memory_need(model, o, batch_tokens);
  const auto available = available_memory();
  if (!need || !available) return;
  if (auto reason = cannot_fit_reason(*need, *available, o); !reason.empty())
    throw Error(fmt::format("{}: {}", model.string(), reason));
}

}  // namespace headprune::pruner
