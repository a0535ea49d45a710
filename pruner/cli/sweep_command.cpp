#include <iostream>

#include <fmt/format.h>

#include "gates/gate_kinds.h"
#include "models/errors.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/quality_flags.h"
#include "pruner/cli/training_flags.h"
#include "pruner/jobs/sweep.h"

namespace headprune::cli {
namespace {

/// The --targets list, each in [0, 1). @throws UsageError.
std::vector<double> parse_targets(const std::string& text) {
  const auto targets = parse_number_list(text, "--targets");
  for (double t : targets) pruner::check_target_sparsity(t, "--targets");
  return targets;
}

/// --baselines LIST into `o`, checked against the gated kinds (`ffn`) and the recovery flags.
/// @throws UsageError naming an unknown baseline or a combination it cannot compare.
void set_baselines(pruner::SweepOptions& o, const std::string& baselines, bool ffn) {
  for (const auto& name : baselines.empty() ? std::vector<std::string>{} : split_list(baselines)) {
    if (name != "importance" && name != "layers" && name != "heads" && name != "ffn")
      throw UsageError(
          fmt::format("--baselines: '{}' is not a baseline headprune builds (importance, layers, heads, ffn)", name));
    if (name == "ffn" && !o.job.training.gates_sublayers())
      throw UsageError("--baselines ffn compares heads and FFN blocks with sublayer gates added: use --prune "
                       "heads,ffn,layers");
    if (name == "ffn") {
      o.ffn_baseline = true;
      continue;
    }
    if (name == "heads" && !ffn)
      throw UsageError("--baselines heads compares heads alone with heads and FFN neurons: add --prune heads,ffn");
    if (name == "importance" && ffn)
      throw UsageError("--baselines importance removes a fraction of heads, not of FLOPs: with --prune heads,ffn use "
                       "the heads or layers baseline");
    (name == "importance" ? o.importance_baseline : name == "layers" ? o.layer_baseline : o.heads_baseline) = true;
  }
  if (o.layer_baseline && o.job.refit.method != pruner::RefitMethod::kNone)
    throw UsageError("--baselines layers has no --refit (it refits attention blocks layer by layer, and whole "
                     "layers are gone): sweep without --refit, or without the layers baseline");
  if (o.layer_baseline && o.job.rearrange.enabled)
    throw UsageError("--baselines layers has no --rearrange (it swaps heads within a layer, and the baseline removes "
                     "whole layers): sweep without --rearrange, or without the layers baseline");
}

}  // namespace

int run_sweep(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("sweep", "sweep MODEL (--data FILE... | --labels FILE) [--targets 0.25,0.5,0.75] [--sts FILE] -o DIR [options]");
  std::string model, out, targets = "0.25,0.5,0.75";
  PruneFlags prune;
  line.positional("model", "MODEL", &model, "checkpoint folder");
  add_prune_flags(line, prune, out, "sweep folder: target-XX/ checkpoints + sweep.json, sweep.txt, sweep.svg");
  line.group(group::kTarget).add_options()
      ("targets", arg(&targets, "S,...", targets), "sparsity targets, comma-separated: fractions of heads removed (with --prune heads,ffn: of the dense model's FLOPs per token, trained as --target-flops 1-S); one gate-training run each (or one in all with --one-run)");
  line.group(group::kTarget).add_options()
      ("one-run", "train the gates once, at the middle target, and read the other targets off their "
                  "ranking (nested masks; gates only)");
  std::string baselines;
  line.group("Quality").add_options()
      ("baselines", arg(&baselines, "LIST"),
       "also prune at every target without training, for comparison on the same axes: importance = remove "
       "the heads whose removal alone changes the dense model least (ablation importance on the training "
       "text, Michel et al. 2019) into importance-XX/; layers = remove whole layers instead (round(target x "
       "layers) of them, chosen greedily by the same distillation loss) into layers-XX/; heads = with --prune "
       "heads,ffn, heads only trained to the same FLOPs budgets into heads-XX/ (a budget they cannot reach is "
       "listed as such); ffn = with --prune heads,ffn,layers, heads and FFN blocks without the sublayer gates "
       "into ffn-XX/");
  QualityFlags quality;
  add_quality_flags(line, quality, "every model, the dense one too (without either: by embedding cosine to the dense model)");
  add_training_flags(line, {"target-sparsity", "l0-lambda", "target-params", "target-flops", "target-latency",
                            "target-kv-bytes", "latency-shape", "latency-table"});
  line.example("sweep MODEL --data train.txt --targets 0.25,0.5,0.75 --sts sts-dev.csv -o out/sweep",
               "three pruned models, their STS-B quality and measured speedup; plot in out/sweep/sweep.svg")
      .example("sweep MODEL --data train.txt --targets 0.3,0.6 --no-bench -o out/quick",
               "quality only (speedup \"not measured\")")
      .example("sweep MODEL --data train.txt --one-run --sts sts-dev.csv -o out/sweep1",
               "the same three sizes from one gate training")
      .example("sweep LLM --data wiki.txt --targets 0.25,0.33 --task piqa,arc_easy --task-limit 200 -o out/llm",
               "a decoder's sweep judged by zero-shot accuracy (after scripts/fetch-data)")
      .example("sweep MODEL --data train.txt --baselines importance,layers --sts sts-dev.csv -o out/sweep-b",
               "the L0 gates against untrained importance masks and dropped layers on the same plot")
      .example("sweep MODEL --data train.txt --prune heads,ffn --targets 0.33,0.5 --baselines heads,layers --sts "
               "sts-dev.csv -o out/sweep-ffn",
               "heads and FFN neurons at a third and half of the FLOPs removed, against heads alone and dropped layers");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (const int world = pruner::DistributedEnvironment::launched_world_size(); world > 1)
    throw UsageError(fmt::format("sweep does not run data-parallel (WORLD_SIZE={} is set by a launcher): run "
                                 "`prune --distributed` once per target instead",
                                 world));
  pruner::SweepOptions o;
  o.targets = parse_targets(targets);
  // The job template needs one target to validate its flags; each run sets its own.
  const bool ffn = gates::gates_ffn(gates::parse_gate_kinds(vm["prune"].as<std::string>()));
  po::variables_map with_target = vm;
  if (ffn)
    with_target.insert({"target-flops", po::variable_value(fmt::format("{:.10g}%", 100 * (1 - o.targets.front())), false)});
  else
    with_target.insert({"target-sparsity", po::variable_value(o.targets.front(), false)});
  o.job = prune_job_options(prune, with_target, globals, model, out);
  o.out = out;
  o.one_run = vm.count("one-run") > 0;
  if (o.one_run && ffn)
    throw UsageError("--one-run reads heads-only gates at other targets; with --prune heads,ffn train once per target "
                     "(drop --one-run)");
  if (o.one_run && o.job.training.train_weights)
    throw UsageError("--one-run trains the gates only: weights fine-tuned for one mask do not fit the others; "
                     "drop --train-weights (or sweep without --one-run)");
  o.quality = quality_measure(quality, vm);
  set_baselines(o, baselines, ffn);
  const auto sweep = pruner::run_sweep(o);
  if (vm.count("json"))
    std::cout << sweep.dump(2) << "\n";
  else
    std::cout << pruner::sweep_table(sweep) << fmt::format("written to {} (sweep.txt, sweep.json, sweep.svg)\n", out);
  return 0;
}

}  // namespace headprune::cli
