#include <filesystem>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/formats/llama2c.h"
#include "models/formats/safetensors.h"
#include "models/registry.h"
#include "models/tokenizer/llama2c_tokenizer.h"
#include "pruner/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"

namespace headprune::cli {

int run_convert_llama2c(const std::vector<std::string>& args, const GlobalOptions&) {
  namespace fs = std::filesystem;
  CommandLine line("convert-llama2c", "convert-llama2c MODEL.bin [--tokenizer TOK.bin] -o DIR [--force]");
  std::string model, tokenizer, out;
  line.positional("model", "MODEL.bin", &model, "llama2.c .bin checkpoint");
  line.group(group::kRequired).add_options()
      ("out,o", arg(&out, "DIR")->required(), "folder to write (HF LLaMA layout)");
  line.group(group::kOptions).add_options()
      ("tokenizer", arg(&tokenizer, "FILE"),
       "llama2.c tokenizer file (e.g. tok512.bin), copied as tokenizer.bin; a SentencePiece "
       ".model of the same name beside it is copied as tokenizer.model")
      ("force", "replace what an earlier run wrote in --out (only that: any other file there stops the run, named)");
  line.example("convert-llama2c stories260K.bin --tokenizer tok512.bin -o out/stories260K",
               "an HF LLaMA folder that prune, inspect and generate read");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  auto converted = models::read_llama2c(model);
  const auto config = models::read_config(converted.config_json, model);
  if (!tokenizer.empty())  // validate before writing anything
    models::Llama2cTokenizer::from_file(tokenizer, config.vocab_size);
  else
    log::warn("no --tokenizer: {} will hold no tokenizer (generate then needs --tokenizer)", out);
  pruner::build_folder_atomic(out, vm.count("force") > 0, [&](const fs::path& tmp) {
    models::save_safetensors(tmp / "model.safetensors", converted.weights, {{"format", "pt"}});
    pruner::write_file_atomic(tmp / "config.json", converted.config_json.dump(2) + "\n");
    if (!tokenizer.empty()) {
      fs::copy_file(tokenizer, tmp / models::kLlama2cTokenizerFile);
      const auto sp_model = fs::path(tokenizer).replace_extension(".model");
      if (fs::exists(sp_model)) fs::copy_file(sp_model, tmp / "tokenizer.model");
    }
  });
  const auto& h = converted.header;
  log::info("{} -> {}: {} layers, dim {}, {} query heads sharing {} KV heads, vocab {}", model,
            out, h.n_layers, h.dim, h.n_heads, h.n_kv_heads, h.vocab());
  return 0;
}

}  // namespace headprune::cli
