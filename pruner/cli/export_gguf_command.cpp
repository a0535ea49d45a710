#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/checkpoint.h"
#include "models/gguf_model.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"

namespace headprune::cli {

int run_export_gguf(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("export-gguf", "export-gguf MODEL -o FILE.gguf [--type f32|f16|q8_0] [--force] [--json]");
  std::string model, out, type = "f32";
  line.positional("model", "MODEL", &model, "LLaMA, Mistral, Qwen2, Qwen3, Phi-3 or Gemma 3 checkpoint folder (or .gguf / llama2.c .bin file), pruned or not");
  line.group(group::kRequired).add_options()
      ("out,o", arg(&out, "FILE")->required(), "the .gguf file to write (new, or --force)");
  line.group(group::kOutput).add_options()
      ("type", arg(&type, "TYPE", type), "how matrices are stored: f32, f16 or q8_0 (norms stay f32)")
      ("force", "replace an existing FILE")
      ("json", "print what was written as JSON on stdout");
  line.example("export-gguf out/smollm2-pruned -o out/smollm2-pruned.gguf",
               "a llama.cpp model file (architecture llama, or deci for uneven heads or FFN widths per layer)")
      .example("apply MODEL --remove-heads '{\"0\": [1]}' -o out/p --gguf",
               "the same inside an exported folder (model.gguf)");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  const auto gguf_type = models::parse_gguf_export_type(type);
  models::check_gguf_target(out, vm.count("force") > 0);  // before the (slow) load
  log::info("loading {}", model);
  auto ckpt = models::load_checkpoint(model, globals.torch_device());
  const auto written = models::export_gguf(ckpt, out, vm.count("force") > 0, gguf_type);
  for (const auto& w : written.warnings) log::warn("{}", w);
  std::vector<int64_t> heads, kv, ffn;
  for (const auto& h : written.layers) {
    heads.push_back(h.n_head);
    kv.push_back(h.n_head_kv);
    ffn.push_back(h.n_ff);
  }
  const auto bytes = std::filesystem::file_size(out);
  const nlohmann::json json = {{"file", out},
                               {"bytes", bytes},
                               {"architecture", written.architecture},
                               {"type", type},
                               {"tokenizer", written.has_tokenizer},
                               {"head_count", heads},
                               {"head_count_kv", kv},
                               {"feed_forward_length", ffn},
                               {"warnings", written.warnings}};
  auto layout = !written.per_layer_heads
                     ? fmt::format("{} query / {} KV heads in every layer", heads.at(0), kv.at(0))
                     : fmt::format("query heads per layer {}; KV heads {}", fmt::join(heads, ","), fmt::join(kv, ","));
  if (written.per_layer_ffn) layout += fmt::format("; FFN widths {}", fmt::join(ffn, ","));
  emit_result(json,
              fmt::format("GGUF file written to {} ({:.1f} MiB, architecture {}, {}; {})\n", out,
                          static_cast<double>(bytes) / (1 << 20), written.architecture, type, layout),
              "", vm.count("json") > 0);
  return 0;
}

}  // namespace headprune::cli
