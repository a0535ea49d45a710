#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/quality_flags.h"
#include "pruner/cli/training_flags.h"
#include "pruner/format.h"
#include "pruner/jobs/prune_job.h"

namespace headprune::cli {
namespace {

/// The summary's budget line: what the budget allowed, what the export holds, and whether it
/// is within it (to the relative 1e-9 keep_mask_for_target's selection stops at).
void print_budget(const nlohmann::json& allowed, const nlohmann::json& achieved, const char* what) {
  const double a = allowed.get<double>(), got = achieved.get<double>();
  std::cout << fmt::format("  budget         {:.10g} {} {:.10g}, {}\n", a, what, got,
                           got <= a * (1 + 1e-9) ? "within it" : "OVER IT");
}

/// --sts / --task: the dense and the pruned model's score, and the change.
void print_quality(const nlohmann::json& s) {
  const auto& q = s.value("quality", nlohmann::json());
  if (!q.is_object()) return;
  const double dense = q["dense"].get<double>(), pruned = q["pruned"].get<double>();
  std::cout << fmt::format("  quality        {} {:.2f} -> {:.2f} ({:+.2f}; dense -> pruned)\n",
                           pruner::QualityMeasure::column(q["measure"].get<std::string>()), dense, pruned,
                           pruned - dense);
}

void print_summary(const nlohmann::json& s) {
  const auto& apply = s["apply"];
  const auto& fid = s["fidelity"];
  std::cout << fmt::format("\nPruned checkpoint: {}\n", s["out"].get<std::string>());
  std::cout << fmt::format("  heads kept     {} of {}; per layer {}\n", s["heads_kept"].get<int64_t>(),
                           s["heads_total"].get<int64_t>(),
                           fmt::join(s["heads_per_layer"].get<std::vector<int64_t>>(), " "));
  if (apply.value("ffn_neurons_removed", int64_t{0}) > 0)
    std::cout << fmt::format("  FFN widths     {} -> {} per layer\n",
                             fmt::join(apply["ffn_widths_before"].get<std::vector<int64_t>>(), " "),
                             fmt::join(apply["ffn_widths_after"].get<std::vector<int64_t>>(), " "));
  std::cout << fmt::format("  parameters     {} -> {} ({:+.2f}%)\n", apply["params_before"].get<int64_t>(),
                           apply["params_after"].get<int64_t>(),
                           100.0 * (apply["params_after"].get<double>() / apply["params_before"].get<double>() - 1));
  const auto& gates = s["gates"];
  if (gates.contains("target_params"))
    print_budget(gates["target_params"], apply["params_after"], "parameters (--target-params): the export holds");
  if (gates.contains("target_flops_per_token"))
    print_budget(gates["target_flops_per_token"], gates["achieved_flops_per_token"],
                 "FLOPs per token (--target-flops): the export needs");
  if (gates.contains("target_kv_bytes_per_token"))
    print_budget(gates["target_kv_bytes_per_token"], gates["achieved_kv_bytes_per_token"],
                 "KV-cache bytes per token at F16 (--target-kv-bytes): the export caches");
  std::cout << fmt::format("  file size      {} -> {} ({:+.2f}%; safetensors weights, {} in both)\n",
                           pruner::human_bytes(apply["bytes_before"].get<std::uintmax_t>()),
                           pruner::human_bytes(apply["bytes_after"].get<std::uintmax_t>()),
                           100.0 * (apply["bytes_after"].get<double>() / apply["bytes_before"].get<double>() - 1),
                           apply.value("weights_dtypes", std::string("?")));
  std::cout << fmt::format("  fidelity       held-out embedding cosine to the dense model: mean {:.4f}, "
                           "5th percentile {:.4f} ({} sentences)\n",
                           fid["mean_cosine"].get<double>(), fid["p5_cosine"].get<double>(),
                           fid["sequences"].get<int64_t>());
  if (fid.contains("kl"))
    std::cout << fmt::format("  fidelity       KL(dense || pruned) {:.4f} nats/token; held-out "
                             "perplexity {:.3f} (dense {:.3f})\n",
                             fid["kl"].get<double>(), fid["student_perplexity"].get<double>(),
                             fid["teacher_perplexity"].get<double>());
  print_quality(s);
  if (s["bench"].is_object()) {
    const auto& b = s["bench"];
    const int blas = b.value("blas_threads", 0);
    const auto threads = fmt::format("{} LibTorch + {}", b["threads"].get<int>(),
                                     blas > 0 ? fmt::format("{} BLAS threads", blas) : std::string("its BLAS"));
    for (const auto& c : b["results"])
      std::cout << fmt::format("  speedup        {:.3f}x at batch {} x seq {} (FLOPs ratio {:.3f}x; "
                               "{:.2f} ms -> {:.2f} ms; {})\n",
                               c["speedup"].get<double>(), c["batch_size"].get<int64_t>(), c["seq_len"].get<int64_t>(),
                               c["flops_ratio"].get<double>(), c["dense_ms"]["median"].get<double>(),
                               c["pruned_ms"]["median"].get<double>(), threads);
  }
  if (const auto& l = s.value("latency", nlohmann::json()); l.is_object())
    std::cout << fmt::format("  latency        {:.1f}% of dense measured side by side at batch {} x seq {} = {:.3g} ms "
                             "on the table's scale, budget {:.3g} ms: {} (the table predicted {:.3g} ms; this "
                             "process timed {:.3g} ms against {:.3g} ms dense)\n",
                             100 * l["measured_share"].get<double>(), l["batch_size"].get<int64_t>(),
                             l["seq_len"].get<int64_t>(), l["measured_ms_on_table_scale"].get<double>(),
                             l["budget_ms"].get<double>(), l["within_budget"].get<bool>() ? "within" : "OVER",
                             l["predicted_ms"].get<double>(), l["measured_ms"].get<double>(),
                             l["dense_measured_ms"].get<double>());
  if (s["gates"].contains("convergence_warning"))
    std::cout << "  WARNING        " << s["gates"]["convergence_warning"].get<std::string>() << "\n";
  for (const auto& w : s["text"]["warnings"]) std::cout << "  warning        " << w.get<std::string>() << "\n";
  for (const auto& w : apply["warnings"]) std::cout << "  warning        " << w.get<std::string>() << "\n";
  std::cout << fmt::format("  report         {0}/headprune/report.txt, {0}/headprune/heads.svg\n",
                           s["out"].get<std::string>());
  if (s.contains("head_roles")) {
    std::vector<std::string> parts;
    for (const auto& [role, n] : s["head_roles"].items())
      parts.push_back(fmt::format("{} {}/{}", role, n.value("kept", 0), n.value("removed", 0)));
    std::cout << fmt::format("  head roles     kept/removed: {}; {}/headprune/head_roles.txt\n", fmt::join(parts, ", "),
                             s["out"].get<std::string>());
  }
  std::cout << fmt::format("  took           {}\n", pruner::human_duration(s["seconds"].get<double>()));
}

}  // namespace

int run_prune(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("prune", "prune MODEL (--data FILE... | --labels FILE) --target-sparsity S -o DIR [options]");
  std::string model, out;
  PruneFlags prune;
  line.positional("model", "MODEL", &model, "checkpoint folder (config.json, model.safetensors, tokenizer)");
  add_prune_flags(line, prune, out, "folder for the pruned checkpoint (new or empty, or --force)");
  add_training_flags(line);
  QualityFlags quality;
  add_quality_flags(line, quality, "the dense and the pruned model after fidelity");
  pruner::DistributedOptions distributed;
  add_distributed_flags(line, distributed);
  line.example("prune .cache/models/all-MiniLM-L6-v2 --data .cache/text/wordnet-examples.txt "
               "--target-sparsity 0.5 -o out/minilm-50",
               "remove half of MiniLM's heads, trained on the sentences scripts/setup extracts (about 5 minutes on 2 cores)")
      .example("prune MODEL --data train.txt --target-sparsity 0.3 --steps 600 --train-weights -o out/m-30",
               "a gentler target, longer training, then fine-tune the kept weights")
      .example("prune MY-CLASSIFIER --labels train.tsv --target-sparsity 0.5 -o out/c-50",
               "a classifier: train on its labels (sentence<TAB>label) mixed with the distillation")
      .example("prune LLM --data wiki.txt --target-sparsity 0.25 --task piqa,arc_easy --task-limit 200 -o out/llm-25",
               "a decoder, judged by zero-shot accuracy before and after (after scripts/fetch-data)")
      .example("prune MODEL --data train.txt --target-sparsity 0.3 -o out/m-30 --resume",
               "continue a run that was stopped");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  auto job = prune_job_options(prune, vm, globals, model, out);
  job.quality = quality_measure(quality, vm);
  const auto group = join_if_distributed(vm, distributed, globals);
  const auto summary = pruner::run_prune_job(job, group);
  if (!group.is_main()) return 0;  // rank 0 exports and reports
  if (vm.count("json"))
    std::cout << summary.dump(2) << "\n";
  else
    print_summary(summary);
  return 0;
}

}  // namespace headprune::cli
