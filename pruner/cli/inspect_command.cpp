#include <iostream>

#include "models/checkpoint.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/measure/inspect.h"

namespace headprune::cli {

int run_inspect(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("inspect", "inspect MODEL [--seq-len N] [--json]");
  std::string model;
  int64_t seq_len = 128;
  line.positional("model", "MODEL", &model, "checkpoint folder (or llama2.c .bin file)");
  line.group(group::kOptions).add_options()
      ("seq-len", arg(&seq_len, "N", seq_len), "sequence length at which FLOPs per token are counted")
      ("json", "print JSON instead of text");
  line.example("inspect .cache/models/all-MiniLM-L6-v2", "layers, heads per layer, parameters, FLOPs")
      .example("inspect out/minilm-50 --json", "the same for a pruned checkpoint, as JSON");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  auto ckpt = models::load_checkpoint(model, globals.torch_device());
  auto summary = pruner::summarize(ckpt, seq_len);
  if (vm.count("json"))
    std::cout << pruner::to_json(summary).dump(2) << "\n";
  else
    std::cout << pruner::to_text(summary);
  return 0;
}

}  // namespace headprune::cli
