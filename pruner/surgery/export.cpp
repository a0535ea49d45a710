#include "pruner/surgery/export.h"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/model_family.h"
#include "models/model_size.h"
#include "models/remote_code.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "pruner/atomic_write.h"

namespace headprune::pruner {
namespace fs = std::filesystem;
namespace {

/// Weights of the pruned model in another format, which would still be dense: top-level weight
/// files and exported-model folders. Weights inside sentence-transformers module folders
/// (2_Dense/model.safetensors) belong to modules surgery does not touch and are copied.
bool is_stale_weights(const fs::path& relative) {
  static const std::set<std::string> exts = {".bin", ".h5", ".msgpack", ".onnx", ".onnx_data", ".ot", ".safetensors",
                                             ".pt", ".pth", ".ckpt", ".gguf"};
  static const std::set<std::string> dirs = {"onnx", "openvino"};
  if (dirs.count(relative.begin()->string())) return true;
  if (relative.has_parent_path()) return false;
  if (relative.filename() == "model.safetensors.index.json") return true;
  // A llama2.c tokenizer is a .bin but holds no weights.
  if (relative == models::kLlama2cTokenizerFile) return false;
  return exts.count(relative.extension().string()) > 0;
}

void write_extra_files(const fs::path& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [relative, content] : files) {
    fs::create_directories((dir / relative).parent_path());
    write_file_atomic(dir / relative, content);
  }
}

/// Per layer, in the numbering of the model first pruned (ModelConfig::original_head_ids): the
/// heads before, kept and removed, and the gate each kept head was folded with.
nlohmann::json layer_records(const models::ModelConfig& config,
                             const std::vector<std::vector<int64_t>>& heads_before,
                             const std::vector<std::vector<double>>& gates) {
  nlohmann::json layers = nlohmann::json::array();
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const auto kept = config.original_ids(l, config.kept_heads[l]);
    const auto before = config.original_ids(l, heads_before[l]);
    std::vector<int64_t> removed;
    for (auto h : before)
      if (std::find(kept.begin(), kept.end(), h) == kept.end()) removed.push_back(h);
    layers.push_back({{"heads_before", before},
                      {"kept", kept},
                      {"removed", removed},
                      {"gate", l < static_cast<int64_t>(gates.size()) && !gates[l].empty()
                                   ? nlohmann::json(gates[l])
                                   : nlohmann::json(std::vector<double>(kept.size(), 1.0))}});
  }
  return layers;
}

/// Who can build a model whose layers keep different (or zero) FFN widths.
std::string uneven_ffn_note(const models::ModelConfig& config) {
  return fmt::format("the layers keep FFN widths {} (headprune.intermediate_sizes), which no family's own HF class "
                     "builds: load it with trust_remote_code=True (headprune's modelling code, registered in "
                     "auto_map) in every transformers version",
                     fmt::join(config.intermediate_sizes, ", "));
}

/// What a user of the export should know: empty layers, a missing tokenizer, tensors carried
/// through, a head layout only headprune reads.
std::vector<std::string> export_warnings(const models::Checkpoint& checkpoint) {
  const auto& config = checkpoint.model->config();
  const auto& family = config.family();
  std::vector<std::string> warnings;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l)
    if (config.kept_heads[l].empty()) warnings.push_back(family.empty_layer_warning(l));
  if (!fs::is_directory(checkpoint.dir) && !checkpoint.implied_files.count("tokenizer.json"))
    warnings.push_back(fmt::format(
        "{} is a single llama2.c file: the export has no tokenizer (run convert-llama2c with "
        "--tokenizer first to keep one)",
        checkpoint.dir.string()));
  if (!checkpoint.unused_keys.empty())
    warnings.push_back(fmt::format(
        "{} tensor(s) the architecture does not use are carried through unchanged: {}",
        checkpoint.unused_keys.size(), fmt::join(checkpoint.unused_keys, ", ")));
  if (auto warning = family.layout_warning(config)) warnings.push_back(*warning);
  if (!config.plain_ffn()) warnings.push_back(uneven_ffn_note(config));
  return warnings;
}

/// Copies the source folder's other files into `tmp` (not config.json, not weights that would
/// still be dense: those are listed in result.skipped). Files may be symlinks (a Hugging Face
/// cache snapshot links every file into blobs/): paths are taken lexically, and copy_file
/// copies the link target's content. A single-file source (llama2.c .bin) has nothing to copy.
/// The family's remote-code files are not copied: the export writes it when it still needs it.
void copy_source_files(const fs::path& source, const fs::path& tmp, const models::ModelFamily& family,
                       ExportResult& result) {
  const auto* remote = family.remote_code();
  const auto files = fs::is_directory(source)
                         ? fs::recursive_directory_iterator(source, fs::directory_options::follow_directory_symlink)
                         : fs::recursive_directory_iterator();
  for (auto it = files; it != fs::recursive_directory_iterator(); ++it) {
    const auto rel = it->path().lexically_relative(source);
    const auto name = rel.filename().string();
    // Hidden files/folders (.git, .complete) and an earlier run's headprune/ artefacts.
    if (rel.begin()->string().rfind('.', 0) == 0 || rel.begin()->string() == "headprune") {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (is_stale_weights(rel)) {
      // Our own weights are written by the caller; anything else would still be dense.
      const bool ours = !rel.has_parent_path() && (rel.extension() == ".safetensors" ||
                                                   name == "model.safetensors.index.json");
      if (!ours) result.skipped.push_back(rel.string());
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory()) {
      fs::create_directories(tmp / rel);
    } else if (rel.has_parent_path() ||
               (name != "config.json" && !(remote && (name == remote->file_name || remote->imports.count(name))))) {
      fs::copy_file(it->path(), tmp / rel, fs::copy_options::overwrite_existing);
      result.copied.push_back(rel.string());
    }
  }
}

}  // namespace

ExportResult export_checkpoint(const models::Checkpoint& checkpoint, const fs::path& out, bool force,
                               const std::vector<std::vector<int64_t>>& heads_before,
                               const std::vector<std::vector<double>>& gates,
                               const nlohmann::json& record,
                               const std::map<std::string, std::string>& extra_files,
                               const ExportFinish& finish) {
  check_export_target(checkpoint.dir, out, force);
  const auto& config = checkpoint.model->config();
  ExportResult result;
  result.dir = out;
  result.warnings = export_warnings(checkpoint);
  auto cfg = config.to_json();
  // Merged into what the config itself keeps there (LLaMA's per-layer kept_heads).
  cfg["headprune"].update(nlohmann::json{{"version", HEADPRUNE_VERSION},
                                         {"num_attention_heads_per_layer", config.heads_per_layer()},
                                         {"layers", layer_records(config, heads_before, gates)},
                                         {"record", record},
                                         {"note", config.family().export_note(config) +
                                                      (config.plain_ffn() ? "" : "; " + uneven_ffn_note(config))}});

  auto files = extra_files;
  files.insert(checkpoint.implied_files.begin(), checkpoint.implied_files.end());
  if (const auto* remote = config.family().remote_code(); remote && config.family().needs_remote_code(config)) {
    cfg["auto_map"] = remote->auto_map;
    files[remote->file_name] = remote->source;
    files.insert(remote->imports.begin(), remote->imports.end());
  }

  build_folder_atomic(out, force, [&](const fs::path& tmp) {
    models::save_safetensors(tmp / "model.safetensors", models::checkpoint_state_dict(checkpoint),
                             {{"format", "pt"}});
    write_file_atomic(tmp / "config.json", cfg.dump(2) + "\n");
    copy_source_files(checkpoint.dir, tmp, config.family(), result);
    write_extra_files(tmp, files);
    result.weights_bytes = models::weights_file_bytes(tmp);
    if (finish) write_extra_files(tmp, finish(tmp, result));
  });
  return result;
}

}  // namespace headprune::pruner
