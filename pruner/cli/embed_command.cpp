#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/input_file.h"
#include "models/formats/safetensors.h"
#include "pruner/cli/command.h"
#include "pruner/log.h"
#include "pruner/measure/sts.h"

namespace headprune::cli {

int run_embed(const std::vector<std::string>& args, const GlobalOptions& globals) {
  po::options_description desc("embed options");
  std::string model, input, out;
  std::size_t batch_size = 32;
  desc.add_options()
      ("model", po::value<std::string>(&model)->required(), "checkpoint folder (positional)")
      ("input", po::value<std::string>(&input)->required(),
       "UTF-8 text file, one sentence per line (every line is embedded, blank ones too)")
      ("out", po::value<std::string>(&out)->required(),
       "safetensors file to write: 'embeddings' [lines, embedding size] float32")
      ("batch-size", po::value<std::size_t>(&batch_size)->default_value(32), "sentences per batch");
  po::variables_map vm;
  if (!parse_args(args, "headprune embed MODEL --input TEXT --out EMBEDDINGS.safetensors", desc,
                  {"model"}, vm))
    return 0;
  if (batch_size < 1) throw UsageError("--batch-size must be >= 1");
  auto in = models::open_input_file(input, "--input");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  const auto device = globals.torch_device();
  auto ckpt = models::load_checkpoint(model, device);
  auto embeddings = pruner::embed_texts(ckpt, lines, batch_size, device);
  models::save_safetensors(out, {{"embeddings", embeddings}}, {{"model", model}, {"pooling", ckpt.pooling.describe()}});
  log::info("{} embeddings of size {} written to {}", embeddings.size(0), embeddings.size(1), out);
  return 0;
}

}  // namespace headprune::cli
