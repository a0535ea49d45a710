#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/training_flags.h"
#include "pruner/jobs/latency_measurement.h"
#include "pruner/log.h"
#include "pruner/training/gates_folder.h"
#include "pruner/training/memory_fit.h"

namespace headprune::cli {

int run_train_gates(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("train-gates",
                   "train-gates MODEL (--data FILE... | --labels FILE) (--target-sparsity S | --l0-lambda X) -o DIR [options]");
  std::string model, out;
  line.positional("model", "MODEL", &model, "checkpoint folder");
  for (const char* caption : {group::kRequired, group::kTarget, group::kOutput, group::kTraining,
                              group::kText, group::kResume, group::kAdvanced})
    line.group(caption);
  line.group(group::kRequired).add_options()("out,o", arg(&out, "DIR")->required(), "gates folder to write");
  line.group(group::kOutput).add_options()
      ("force", "replace an earlier run's files in --out (gates.json, train_log.jsonl, snapshot, "
                "weights; any other file there stops the run, named)")
      ("json", "print the result (heads kept, per layer, gates) as JSON on stdout");
  line.group(group::kResume).add_options()
      ("resume", "continue an interrupted run from --out's snapshot")
      ("stop-after", arg<int64_t>(nullptr, "N"), "stop after N steps of this invocation, leaving a "
       "snapshot that --resume continues");
  add_training_flags(line);
  pruner::DistributedOptions distributed;
  add_distributed_flags(line, distributed);
  line.example("train-gates MODEL --data train.txt --target-sparsity 0.5 -o out/gates",
               "learn which half of the heads to keep; then: headprune apply MODEL --gates out/gates -o out/pruned")
      .example("launch --nproc 2 -- headprune train-gates MODEL --data train.txt --target-sparsity 0.5 "
               "-o out/gates --distributed",
               "the same, data-parallel over 2 local processes")
      .example("train-gates MODEL --data train.txt --l0-lambda 0.01 -o out/gates-l0",
               "a fixed L0 penalty (Voita et al.) instead of a target");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  const auto settings = training_settings(vm, globals);
  auto options = settings.training;
  options.out_dir = out;
  options.model_path = model;
  options.resume = vm.count("resume") > 0;
  if (vm.count("stop-after")) options.stop_after = vm["stop-after"].as<int64_t>();
  const auto group = join_if_distributed(vm, distributed, globals);
  if (group.is_main()) pruner::prepare_gates_folder(model, out, options.resume, vm.count("force") > 0);
  models::require_tokenizer_files(model, "train-gates");
  pruner::refuse_if_it_cannot_fit(model, options,
                                  static_cast<int64_t>(options.batch_size * settings.corpus.max_length));
  log::info("loading {}", model);
  auto ckpt = models::load_checkpoint(model, options.device, options.weight_storage());
  auto corpus = pruner::load_training_text(settings.text, ckpt, settings.corpus);
  const bool folder_was_new = !std::filesystem::exists(out);
  auto state = pruner::discard_if_failed(
      [&] {
        pruner::provide_latency_table(options, ckpt, group);
        return pruner::train_gates(ckpt, corpus, options, group);
      },
      out, folder_was_new, group.is_main() && !options.resume);
  if (!group.is_main()) return 0;  // rank 0 reports
  if (!state.complete) {
    std::cout << fmt::format("stopped at step {} of {}; continue with the same command and --resume\n",
                             state.step, options.steps);
    return 0;
  }
  if (vm.count("json"))
    std::cout << state.to_json().dump(2) << "\n";
  else
    std::cout << fmt::format("{} of {} heads kept; gates written to {}/gates.json\n", state.heads_kept(),
                             state.heads_total(), out);
  return 0;
}

}  // namespace headprune::cli
