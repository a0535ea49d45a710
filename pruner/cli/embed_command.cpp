#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/input_file.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/dtype_option.h"
#include "pruner/log.h"
#include "pruner/measure/sts.h"

namespace headprune::cli {

namespace {

/// {"model", "embedding_size", "embeddings": [[...], ...]} of a [lines, size] float tensor.
nlohmann::json embeddings_json(const torch::Tensor& embeddings, const std::string& model) {
  const auto rows = embeddings.to(torch::kCPU, torch::kFloat32).contiguous();
  nlohmann::json list = nlohmann::json::array();
  const float* data = rows.data_ptr<float>();
  for (int64_t i = 0; i < rows.size(0); ++i)
    list.push_back(std::vector<float>(data + i * rows.size(1), data + (i + 1) * rows.size(1)));
  return {{"model", model}, {"embedding_size", rows.size(1)}, {"embeddings", list}};
}

}  // namespace

int run_embed(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("embed", "embed MODEL --data FILE --embeddings FILE.safetensors [--json]");
  std::string model, input, out;
  std::size_t batch_size = 32;
  DtypeOption dtype;
  line.positional("model", "MODEL", &model, "checkpoint folder");
  line.group(group::kRequired).add_options()
      ("data", arg(&input, "FILE")->required(),
       "UTF-8 text file, one sentence per line (every line is embedded, blank ones too)")
      ("embeddings", arg(&out, "FILE"),
       "safetensors file to write: 'embeddings' [lines, embedding size] float32 (this, --json or both)");
  line.group(group::kOptions).add_options()
      ("batch-size", arg(&batch_size, "N", batch_size), "sentences per batch")
      ("json", "also print the embeddings as JSON on stdout: {\"embeddings\": [[...], ...]}");
  dtype.add_to(line.group(group::kOptions));
  line.alias("--input", "--data").alias("--out", "--embeddings");
  line.example("embed MODEL --data sentences.txt --json", "the embeddings as JSON on stdout")
      .example("embed out/minilm-50 --data sentences.txt --embeddings emb.safetensors",
               "the sentence-transformers embedding of every line");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (batch_size < 1) throw UsageError("--batch-size must be >= 1");
  dtype.scalar_type();  // a bad --dtype is a usage error before anything loads
  if (out.empty() && !vm.count("json")) throw UsageError("give --embeddings FILE, --json or both");
  auto in = models::open_input_file(input, "--data");
  std::vector<std::string> lines;
  for (std::string text; std::getline(in, text);) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    lines.push_back(text);
  }
  const auto device = globals.torch_device();
  models::require_tokenizer_files(model, "embed");
  auto ckpt = models::load_checkpoint(model, device);
  dtype.apply(ckpt);
  auto embeddings = pruner::embed_texts(ckpt, lines, batch_size, device);
  if (!out.empty()) {
    models::save_safetensors(out, {{"embeddings", embeddings}},
                             {{"model", model}, {"pooling", ckpt.pooling.describe()}});
    log::info("{} embeddings of size {} written to {}", embeddings.size(0), embeddings.size(1), out);
  }
  if (vm.count("json")) std::cout << embeddings_json(embeddings, model).dump() << "\n";
  return 0;
}

}  // namespace headprune::cli
