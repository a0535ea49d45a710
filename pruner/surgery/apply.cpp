#include "pruner/surgery/apply.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/head_costs.h"
#include "models/loader.h"
#include "models/model_size.h"
#include "pruner/format.h"
#include "pruner/log.h"

namespace headprune::pruner {
namespace {

/// KV heads still used, over all layers.
int64_t kv_heads_present(const models::ModelConfig& c) {
  int64_t n = 0;
  for (const auto& kv : c.kept_kv_heads()) n += static_cast<int64_t>(kv.size());
  return n;
}

}  // namespace
nlohmann::json ApplyResult::to_json() const {
  return {{"out", exported.dir.string()},   {"heads_before", heads_before},
          {"heads_after", heads_after},     {"params_before", params_before},
          {"params_after", params_after},   {"params_per_head", params_per_head},
          {"kv_heads_removed", kv_heads_removed}, {"params_per_kv_head", params_per_kv_head},
          {"bytes_before", bytes_before},   {"bytes_after", bytes_after},
          {"weights_dtypes", weights_dtypes},
          {"reload_max_abs_diff", reload_max_abs_diff}, {"warnings", exported.warnings},
          {"layers_removed", layers_removed},
          {"ffn_widths_before", ffn_widths_before}, {"ffn_widths_after", ffn_widths_after},
          {"ffn_neurons_removed", ffn_neurons_removed}, {"params_per_ffn_neuron", params_per_ffn_neuron}};
}

std::string ApplyResult::describe() const {
  const auto removed = heads_before - heads_after;
  const auto pct = [](double a, double b) { return b > 0 ? 100.0 * (b - a) / b : 0.0; };
  std::string s;
  s += fmt::format("heads       {} -> {} ({} removed)\n", heads_before, heads_after, removed);
  if (!layers_removed.empty())
    s += fmt::format("layers      {} removed whole (attention and feed-forward): {}\n", layers_removed.size(),
                     fmt::join(layers_removed, " "));
  if (ffn_widths_after != ffn_widths_before)
    s += fmt::format("FFN widths  {} -> {} per layer ({} neurons removed)\n", fmt::join(ffn_widths_before, " "),
                     fmt::join(ffn_widths_after, " "), ffn_neurons_removed);
  const auto expected = removed * params_per_head + kv_heads_removed * params_per_kv_head +
                        ffn_neurons_removed * params_per_ffn_neuron;
  // Without KV sharing each removed head takes its own K/V rows: one figure per head.
  const auto breakdown =
      kv_heads_removed == removed
          ? fmt::format("{} heads x {}", removed, params_per_head + params_per_kv_head)
          : fmt::format("{} query heads x {} + {} KV heads x {}", removed, params_per_head,
                        kv_heads_removed, params_per_kv_head);
  const auto ffn_part = ffn_neurons_removed > 0
                            ? fmt::format(" + {} FFN neurons x {}", ffn_neurons_removed, params_per_ffn_neuron)
                            : std::string();
  const auto counted = layers_removed.empty()
                           ? fmt::format("; {}{} = {} parameters removed{}", breakdown, ffn_part, expected,
                                         params_before - params_after == expected ? ", exactly" : ", MISMATCH")
                           : std::string();
  s += fmt::format("parameters  {} -> {} (-{:.2f}%{})\n", params_before, params_after,
                   pct(static_cast<double>(params_after), static_cast<double>(params_before)), counted);
  s += fmt::format("file size   {} -> {} (-{:.2f}%; safetensors weights, {} in both)\n",
                   human_bytes(bytes_before), human_bytes(bytes_after),
                   pct(static_cast<double>(bytes_after), static_cast<double>(bytes_before)),
                   weights_dtypes);
  s += fmt::format("reload      exported folder reproduces the pruned model (max |diff| {:.2g})\n",
                   reload_max_abs_diff);
  return s;
}

ApplyResult apply_and_export(models::Checkpoint& ckpt, const PrunePlan& plan,
                             const std::filesystem::path& out, bool force,
                             const nlohmann::json& record, const torch::Device& device) {
  auto r = apply_in_memory(ckpt, plan);
  export_and_verify(r, ckpt, out, force, record, device);
  return r;
}

namespace {

/// The sizes and dtypes of the model before surgery.
ApplyResult before_surgery(const models::Checkpoint& ckpt) {
  const auto& model = *ckpt.model;
  ApplyResult r;
  r.heads_before = model.config().total_heads();
  r.params_before = models::parameter_count(model);
  // A single-file source (llama2.c, a quantised GGUF) is compared as the dense model would be
  // written: the same safetensors dtypes as the export, not the source file's own encoding.
  r.bytes_before = 0;
  if (std::filesystem::is_directory(ckpt.dir)) {
    r.bytes_before = models::weights_file_bytes(ckpt.dir);
  } else {
    for (const auto& entry : models::checkpoint_state_dict(ckpt)) r.bytes_before += entry.second.nbytes();
  }
  std::set<std::string> dtypes;
  for (const auto& [name, type] : ckpt.source_dtypes) dtypes.insert(c10::toString(type));
  r.weights_dtypes = fmt::format("{}", fmt::join(dtypes, "+"));
  r.heads_present_before = model.config().kept_heads;
  r.ffn_widths_before = model.config().intermediate_sizes;
  return r;
}

/// Rounds to the source dtypes and counts what is left.
void after_surgery(models::Checkpoint& ckpt, ApplyResult& r) {
  // An F16/BF16 source is written back in its dtype: the model in memory is what is written.
  models::round_to_source_dtypes(ckpt);
  r.heads_after = ckpt.model->config().total_heads();
  r.params_after = models::parameter_count(*ckpt.model);
  r.ffn_widths_after = ckpt.model->config().intermediate_sizes;
  for (size_t l = 0; l < r.ffn_widths_after.size() && l < r.ffn_widths_before.size(); ++l)
    r.ffn_neurons_removed += r.ffn_widths_before[l] - r.ffn_widths_after[l];
  r.params_per_ffn_neuron = models::params_per_ffn_neuron(ckpt.model->config());
}

}  // namespace

ApplyResult apply_in_memory(models::Checkpoint& ckpt, const PrunePlan& plan) {
  auto& model = *ckpt.model;
  auto r = before_surgery(ckpt);
  const auto costs = models::head_costs(model.config(), 1);
  r.params_per_head = costs.params_per_query_head;
  r.params_per_kv_head = costs.params_per_kv_head;
  const int64_t kv_before = kv_heads_present(model.config());

  // Gate values folded into each kept head, for the record.
  std::vector<std::vector<double>> folded(plan.size());
  for (size_t l = 0; l < plan.size(); ++l) {
    if (!plan[l].scale.defined()) continue;
    auto s = plan[l].scale.to(torch::kDouble).contiguous();
    for (int64_t i = 0; i < s.numel(); ++i)
      if (std::find(plan[l].remove_local.begin(), plan[l].remove_local.end(), i) ==
          plan[l].remove_local.end())
        folded[l].push_back(s.data_ptr<double>()[i]);
  }
  apply_plan(model, plan);
  after_surgery(ckpt, r);
  r.kv_heads_removed = kv_before - kv_heads_present(model.config());
  r.folded_gates = folded;
  return r;
}

ApplyResult drop_layers_in_memory(models::Checkpoint& ckpt, const std::vector<int64_t>& layers) {
  auto r = before_surgery(ckpt);
  ckpt.model->drop_layers(layers);
  after_surgery(ckpt, r);
  r.heads_present_before = ckpt.model->config().kept_heads;
  r.ffn_widths_before = r.ffn_widths_after;  // the kept layers' FFNs are whole: no neuron counts as removed
  r.ffn_neurons_removed = 0;
  r.layers_removed = layers;
  std::sort(r.layers_removed.begin(), r.layers_removed.end());
  return r;
}

namespace {

/// Loads the folder just written and returns the largest |difference| of its last hidden
/// states from `model`'s on a fixed batch of 2 × 16 token ids.
double reload_difference(models::AttentionModel& model, const std::filesystem::path& dir,
                         const torch::Device& device) {
  const auto& c = model.config();
  // In the file's dtype, widened per use: the same values as float32 storage, half the memory.
  auto reloaded = models::load_checkpoint(dir, device, models::WeightStorage::source);
  torch::NoGradGuard no_grad;
  const int64_t span = std::max<int64_t>(1, std::min<int64_t>(c.vocab_size, 20000) - 1000);
  auto ids = ((torch::arange(32, torch::kLong) * 7919) % span + std::min<int64_t>(1000, c.vocab_size - 1))
                 .clamp_max(c.vocab_size - 1).view({2, 16}).to(device);
  models::ModelInputs in{ids, torch::ones_like(ids), {}};
  auto a = model.forward(in, nullptr).last_hidden_state;
  auto b = reloaded.model->forward(in, nullptr).last_hidden_state;
  return (a - b).abs().max().item<double>();
}

}  // namespace

void export_and_verify(ApplyResult& r, models::Checkpoint& ckpt, const std::filesystem::path& out,
                       bool force, const nlohmann::json& record, const torch::Device& device,
                       const std::map<std::string, std::string>& extra_files,
                       const LateFiles& late_files) {
  log::info("writing {}", out.string());
  auto finish = [&](const std::filesystem::path& tmp, ExportResult& exported) {
    r.exported = exported;
    r.bytes_after = exported.weights_bytes;
    r.reload_max_abs_diff = reload_difference(*ckpt.model, tmp, device);
    if (r.reload_max_abs_diff != 0)
      throw Error(fmt::format("the export to {} does not reproduce the pruned model (max |diff| "
                              "{}); nothing was written; please report this",
                              out.string(), r.reload_max_abs_diff));
    return late_files ? late_files(r) : std::map<std::string, std::string>();
  };
  r.exported = export_checkpoint(ckpt, out, force, r.heads_present_before, r.folded_gates, record,
                                 extra_files, finish);
  for (const auto& w : r.exported.warnings) log::warn("{}", w);
  if (!r.exported.skipped.empty())
    log::warn("not copied (weights in other formats would still be dense): {}",
              fmt::join(r.exported.skipped, ", "));
}

}  // namespace headprune::pruner
