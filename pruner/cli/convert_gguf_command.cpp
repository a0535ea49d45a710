// `headprune convert-gguf FILE.gguf -o DIR`: a llama.cpp GGUF LLaMA as an HF folder.
#include <filesystem>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/gguf_model.h"
#include "models/tokenizer/gguf_tokenizer.h"
#include "pruner/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"

namespace headprune::cli {

int run_convert_gguf(const std::vector<std::string>& args, const GlobalOptions&) {
  namespace fs = std::filesystem;
  CommandLine line("convert-gguf", "convert-gguf MODEL.gguf -o DIR [--force]");
  std::string model, out;
  line.positional("model", "MODEL.gguf", &model, "llama.cpp GGUF file of a LLaMA-style model (architectures llama, qwen2, qwen3, phi3, gemma3; F32, F16, BF16, "
                  "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K tensors)");
  line.group(group::kRequired).add_options()
      ("out,o", arg(&out, "DIR")->required(), "folder to write (HF layout of the family, float32 weights)");
  line.group(group::kOptions).add_options()
      ("force", "replace what an earlier run wrote in --out (only that: any other file there stops the run, named)");
  line.example("convert-gguf SmolLM2-135M-Instruct.Q4_1.gguf -o out/smollm2",
               "config.json, model.safetensors (dequantised), tokenizer.json and tokenizer_config.json "
               "(with the chat template) that transformers and headprune load");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  const auto converted = models::read_gguf_model(model);
  const auto unsupported = models::unsupported_gguf_tokenizer(converted.gguf);
  if (!unsupported.empty()) log::warn("{}: {}; the folder is written without tokenizer files", model, unsupported);
  const auto tokenizer = models::has_gguf_tokenizer(converted.gguf) && unsupported.empty()
                             ? models::gguf_tokenizer(converted.gguf)
                             : nullptr;
  const auto tokenizer_files = models::gguf_tokenizer_files(converted.gguf, tokenizer);  // validated before writing
  pruner::build_folder_atomic(out, vm.count("force") > 0, [&](const fs::path& tmp) {
    models::save_safetensors(tmp / "model.safetensors", converted.weights, {{"format", "pt"}});
    pruner::write_file_atomic(tmp / "config.json", converted.config_json.dump(2) + "\n");
    for (const auto& [name, content] : tokenizer_files) pruner::write_file_atomic(tmp / name, content);
  });
  const auto& c = converted.config;
  log::info("{} -> {}: {} layers, hidden {}, {} query heads sharing {} KV heads, vocab {}{}", model, out,
            c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.vocab_size,
            tokenizer_files.empty() ? " (no tokenizer written)" : "");
  return 0;
}

}  // namespace headprune::cli
