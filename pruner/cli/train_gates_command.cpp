#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"
#include "pruner/cli/command.h"
#include "pruner/cli/training_flags.h"
#include "pruner/log.h"
#include "pruner/training/gates_folder.h"

namespace headprune::cli {

int run_train_gates(const std::vector<std::string>& args, const GlobalOptions& globals) {
  po::options_description desc("train-gates options");
  std::string model, out;
  desc.add_options()
      ("model", po::value<std::string>(&model)->required(), "checkpoint folder (positional)")
      ("out", po::value<std::string>(&out)->required(), "gates folder to write")
      ("resume", "continue an interrupted run from --out's snapshot")
      ("force", "replace an earlier run's files in --out (gates.json, train_log.jsonl, snapshot, "
                "weights); other files stay")
      ("stop-after", po::value<int64_t>(), "stop after N steps of this invocation, leaving a "
       "snapshot that --resume continues");
  pruner::add_training_options(desc);
  po::variables_map vm;
  if (!parse_args(args,
                  "headprune train-gates MODEL --data CORPUS (--target-sparsity S | --l0-lambda X) "
                  "--out GATES_DIR",
                  desc, {"model"}, vm))
    return 0;
  const auto settings = training_settings(vm, globals);
  auto options = settings.training;
  options.out_dir = out;
  options.model_path = model;
  options.resume = vm.count("resume") > 0;
  if (vm.count("stop-after")) options.stop_after = vm["stop-after"].as<int64_t>();
  const auto others = pruner::prepare_gates_folder(model, out, options.resume, vm.count("force") > 0);
  if (!others.empty())
    log::warn("--out {} also holds {} file(s) gate training does not write; they are left as they "
              "are: {}",
              out, others.size(), fmt::join(others, ", "));
  log::info("loading {}", model);
  auto ckpt = models::load_checkpoint(model, options.device);
  if (!ckpt.tokenizer)
    throw Error(fmt::format("{} has no tokenizer (vocab.txt or tokenizer.bin; convert a llama2.c .bin with convert-llama2c --tokenizer): train-gates needs the model's tokenizer", model));
  auto corpus = pruner::load_corpus({settings.data.begin(), settings.data.end()}, *ckpt.tokenizer,
                                    settings.corpus);
  auto state = pruner::train_gates(ckpt, corpus, options);
  if (!state.complete) {
    std::cout << fmt::format("stopped at step {} of {}; continue with --resume\n", state.step, options.steps);
    return 0;
  }
  std::cout << fmt::format("{} of {} heads kept; gates written to {}/gates.json\n", state.heads_kept(),
                           state.heads_total(), out);
  return 0;
}

}  // namespace headprune::cli
