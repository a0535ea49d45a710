#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/generation.h"
#include "models/model_family.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"

namespace headprune::cli {
namespace {

/// --tokenizer if given, else the folder's tokenizer.bin.
std::filesystem::path find_tokenizer(const std::filesystem::path& model, const std::string& flag) {
  if (!flag.empty()) return flag;
  if (std::filesystem::is_regular_file(model))
    throw UsageError(fmt::format("{} is a llama2.c .bin file: give its tokenizer with "
                                 "--tokenizer (e.g. the tok512.bin beside it)",
                                 model.string()));
  const auto file = model / models::kLlama2cTokenizerFile;
  if (!std::filesystem::exists(file))
    throw Error(fmt::format("{} has no {} (llama2.c tokenizer); give one with --tokenizer",
                            model.string(), models::kLlama2cTokenizerFile));
  return file;
}

}  // namespace

int run_generate(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("generate", "generate MODEL [--prompt TEXT] [--max-new-tokens N] [--temperature T] "
                   "[--samples N] [--tokenizer FILE]");
  std::string model, tokenizer, prompt;
  double temperature = 1.0;
  int64_t steps = 256, samples = 1;
  line.positional("model", "MODEL", &model, "LLaMA checkpoint folder, or a llama2.c .bin file");
  line.group(group::kOptions).add_options()
      ("prompt", arg(&prompt, "TEXT", std::string()),
       "text to continue (encoded after BOS); sampling is seeded by the global --seed")
      ("max-new-tokens", arg(&steps, "N", steps),
       "tokens to generate at most (stops earlier at BOS/EOS or max_position_embeddings)")
      ("temperature", arg(&temperature, "T", 1.0), "sampling temperature; 0 = greedy (argmax)")
      ("samples", arg(&samples, "N", samples),
       "texts to generate, printed one per line (line breaks inside a text become spaces): "
       "with --temperature 1 a label-free training corpus drawn from the model itself")
      ("tokenizer", arg(&tokenizer, "FILE"),
       "llama2.c tokenizer file (default: tokenizer.bin in the MODEL folder; required for a .bin)");
  line.alias("--steps", "--max-new-tokens");
  line.example("generate out/stories260K --prompt \"Once upon a time\" --temperature 0",
               "greedy continuation of a prompt")
      .example("generate out/stories260K --samples 500 --max-new-tokens 128 > corpus.txt",
               "a training corpus sampled from the model itself");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (!(temperature >= 0) || !std::isfinite(temperature))
    throw UsageError("--temperature must be a finite number >= 0 (0 = greedy)");
  if (steps < 0) throw UsageError("--max-new-tokens must be >= 0");
  if (samples < 1) throw UsageError("--samples must be >= 1");
  const auto device = globals.torch_device();
  auto ckpt = models::load_checkpoint(model, device);
  if (!ckpt.model->config().family().has_lm_head())
    throw Error(fmt::format("{} is a '{}' model; generate needs a causal language model (LLaMA)",
                            model, ckpt.model->config().model_type));
  auto tok = models::Llama2cTokenizer::from_file(find_tokenizer(model, tokenizer),
                                                 ckpt.model->config().vocab_size);
  models::GenerationOptions options;
  options.steps = steps;
  options.temperature = temperature;
  options.stop_tokens = {models::Llama2cTokenizer::kBos, models::Llama2cTokenizer::kEos};
  const auto start = tok.encode(prompt, true, false);
  for (int64_t i = 0; i < samples; ++i) {
    auto ids = models::generate_tokens(*ckpt.model, start, options);
    auto text = tok.decode(ids);
    if (samples > 1) {
      std::replace(text.begin(), text.end(), '\n', ' ');
      std::replace(text.begin(), text.end(), '\r', ' ');
      if ((i + 1) % 50 == 0) log::info("generated {}/{} texts", i + 1, samples);
    }
    fmt::print("{}\n", text);
    log::debug("token ids: {}", fmt::join(ids, " "));
  }
  return 0;
}

}  // namespace headprune::cli
