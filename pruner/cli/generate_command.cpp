#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/generation.h"
#include "models/loader.h"
#include "models/model_family.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"

namespace headprune::cli {
namespace {

/// --tokenizer (a llama2.c tokenizer file) if given, else the checkpoint's own tokenizer.
std::shared_ptr<models::Tokenizer> find_tokenizer(const models::Checkpoint& ckpt, const std::string& model,
                                                  const std::string& flag) {
  if (!flag.empty())
    return std::make_shared<models::Llama2cTokenizer>(
        models::Llama2cTokenizer::from_file(flag, ckpt.model->config().vocab_size));
  if (ckpt.tokenizer) return ckpt.tokenizer;
  if (std::filesystem::path(model).extension() == ".gguf") models::require_tokenizer_files(model, "generate");  // says why
  if (std::filesystem::is_regular_file(model))
    throw UsageError(fmt::format("{} is a llama2.c .bin file: give its tokenizer with "
                                 "--tokenizer (e.g. the tok512.bin beside it)",
                                 model));
  throw Error(fmt::format("{} has no tokenizer (tokenizer.json or llama2.c {}); give a llama2.c one with "
                          "--tokenizer",
                          model, models::kLlama2cTokenizerFile));
}

/// The prompt's ids: the text as given, or with --chat the checkpoint's chat template applied
/// to it as the user's message, with the assistant's turn opened.
std::vector<int64_t> prompt_ids(const models::Checkpoint& ckpt, const models::Tokenizer& tok,
                                const std::string& prompt, bool chat) {
  if (!chat) return tok.prompt_ids(prompt);
  const auto chat_template = models::ChatTemplate::recognise(ckpt.chat_template);
  return tok.prompt_ids(chat_template.apply({{"user", prompt}}, /*add_generation_prompt=*/true));
}

}  // namespace

int run_generate(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("generate", "generate MODEL [--prompt TEXT] [--chat] [--max-new-tokens N] [--temperature T] "
                   "[--samples N] [--tokenizer FILE] [--no-cache]");
  std::string model, tokenizer, prompt;
  double temperature = 1.0;
  int64_t steps = 256, samples = 1;
  line.positional("model", "MODEL", &model,
                  "decoder checkpoint folder (LLaMA, Mistral, Qwen2, Qwen3, Phi-3, Gemma 3), a llama2.c .bin file, or a llama.cpp .gguf file");
  line.group(group::kOptions).add_options()
      ("prompt", arg(&prompt, "TEXT", std::string()),
       "text to continue (after BOS where the tokenizer adds one); sampling is seeded by the global --seed")
      ("chat", "apply the model's chat template (ChatML) to --prompt as the user's message and print "
               "only the answer; templates headprune cannot apply exactly are refused")
      ("max-new-tokens", arg(&steps, "N", steps),
       "tokens to generate at most (stops earlier at end of text or max_position_embeddings)")
      ("temperature", arg(&temperature, "T", 1.0), "sampling temperature; 0 = greedy (argmax)")
      ("samples", arg(&samples, "N", samples),
       "texts to generate, printed one per line (line breaks inside a text become spaces): "
       "with --temperature 1 a label-free training corpus drawn from the model itself")
      ("tokenizer", arg(&tokenizer, "FILE"),
       "llama2.c tokenizer file (default: the checkpoint's own tokenizer; required for a .bin)")
      ("no-cache", "run the whole sequence at every step instead of the new token against a KV cache "
                   "(same tokens, slower; for comparison)");
  line.alias("--steps", "--max-new-tokens");
  line.example("generate out/stories260K --prompt \"Once upon a time\" --temperature 0",
               "greedy continuation of a prompt")
      .example("generate SmolLM2-135M-Instruct.Q4_1.gguf --chat --prompt \"What is the capital of France?\" "
               "--temperature 0",
               "a chat answer from a GGUF model")
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
  const auto tok = find_tokenizer(ckpt, model, tokenizer);
  const bool chat = vm.count("chat") > 0;
  models::GenerationOptions options;
  options.steps = steps;
  options.temperature = temperature;
  options.stop_tokens = tok->end_of_text_ids();
  options.use_cache = vm.count("no-cache") == 0;
  const auto start = prompt_ids(ckpt, *tok, prompt, chat);
  for (int64_t i = 0; i < samples; ++i) {
    const auto began = std::chrono::steady_clock::now();
    auto ids = models::generate_tokens(*ckpt.model, start, options);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
    const auto new_tokens = static_cast<int64_t>(ids.size() - start.size());
    log::debug("token ids: {}", fmt::join(ids, " "));
    const auto timing = fmt::format("{} new tokens in {:.2f} s: {:.1f} ms per token ({} prompt tokens, {})",
                                    new_tokens, took.count(),
                                    new_tokens ? 1000 * took.count() / static_cast<double>(new_tokens) : 0.0,
                                    start.size(), options.use_cache ? "KV cache" : "no cache");
    if (samples == 1) log::info("{}", timing);
    else log::debug("{}", timing);
    if (chat) ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(start.size()));
    auto text = tok->generated_text(ids);
    if (samples > 1) {
      std::replace(text.begin(), text.end(), '\n', ' ');
      std::replace(text.begin(), text.end(), '\r', ' ');
      if ((i + 1) % 50 == 0) log::info("generated {}/{} texts", i + 1, samples);
    }
    fmt::print("{}\n", text);
  }
  return 0;
}

}  // namespace headprune::cli
