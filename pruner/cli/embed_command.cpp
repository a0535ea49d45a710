#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/inputs.h"
#include "models/safetensors.h"
#include "pruner/cli/command.h"
#include "pruner/log.h"

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
       "safetensors file to write: 'embeddings' [lines, hidden] float32")
      ("batch-size", po::value<std::size_t>(&batch_size)->default_value(32), "sentences per batch");
  po::variables_map vm;
  if (!parse_args(args, "headprune embed MODEL --input TEXT --out EMBEDDINGS.safetensors", desc,
                  {"model"}, vm))
    return 0;
  if (batch_size < 1) throw UsageError("--batch-size must be >= 1");
  std::ifstream in(input, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {}", input));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  const auto device = globals.torch_device();
  auto ckpt = models::load_checkpoint(model, device);
  if (!ckpt.tokenizer) throw Error(fmt::format("{} has no vocab.txt (tokenizer)", model));
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  for (std::size_t i = 0; i < lines.size(); i += batch_size) {
    std::vector<std::string> batch(lines.begin() + static_cast<std::ptrdiff_t>(i),
                                   lines.begin() + static_cast<std::ptrdiff_t>(std::min(lines.size(), i + batch_size)));
    auto inputs = models::to_model_inputs(
        ckpt.tokenizer->encode_batch(batch, static_cast<std::size_t>(ckpt.max_seq_length)), device);
    parts.push_back(ckpt.pooling.embed(ckpt.model->forward(inputs, nullptr).last_hidden_state,
                                       inputs.attention_mask).cpu());
  }
  auto embeddings = parts.empty() ? torch::zeros({0, ckpt.model->config().hidden_size}) : torch::cat(parts);
  models::save_safetensors(out, {{"embeddings", embeddings}}, {{"model", model}, {"pooling", ckpt.pooling.describe()}});
  log::info("{} embeddings of size {} written to {}", embeddings.size(0), embeddings.size(1), out);
  return 0;
}

}  // namespace headprune::cli
