#include <iostream>

#include "models/checkpoint.h"
#include "pruner/cli/command.h"
#include "pruner/measure/inspect.h"

namespace headprune::cli {

int run_inspect(const std::vector<std::string>& args, const GlobalOptions& globals) {
  po::options_description desc("inspect options");
  std::string model;
  int64_t seq_len = 128;
  desc.add_options()
      ("model", po::value<std::string>(&model)->required(), "checkpoint folder (positional)")
      ("seq-len", po::value<int64_t>(&seq_len)->default_value(128),
       "sequence length at which FLOPs per token are counted")
      ("json", "print JSON instead of text");
  po::variables_map vm;
  if (!parse_args(args, "headprune inspect MODEL [--seq-len N] [--json]", desc, {"model"}, vm))
    return 0;
  auto ckpt = models::load_checkpoint(model, globals.torch_device());
  auto summary = pruner::summarize(ckpt, seq_len);
  if (vm.count("json"))
    std::cout << pruner::to_json(summary).dump(2) << "\n";
  else
    std::cout << pruner::to_text(summary);
  return 0;
}

}  // namespace headprune::cli
