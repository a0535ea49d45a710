#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/checkpoint.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"
#include "pruner/surgery/onnx_export.h"

namespace headprune::cli {

int run_export_onnx(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("export-onnx", "export-onnx MODEL -o FILE [--force] [--external-data] [--no-sentence-embedding] [--json]");
  std::string model, out;
  line.positional("model", "MODEL", &model, "checkpoint folder (or llama2.c .bin file), pruned or not");
  line.group(group::kRequired).add_options()
      ("out,o", arg(&out, "FILE")->required(), "the .onnx file to write (new, or --force)");
  line.group(group::kOutput).add_options()
      ("force", "replace an existing FILE")
      ("external-data", "write the weights beside FILE as ONNX external data (FILE_data); "
                        "automatic when they exceed protobuf's 2 GiB")
      ("no-sentence-embedding", "leave out the sentence-transformers pooling output "
                                "(sentence_embedding) of a sentence-transformers folder")
      ("json", "print what was written as JSON on stdout");
  line.example("export-onnx out/minilm-50 -o out/minilm-50.onnx",
               "last_hidden_state and sentence_embedding, for ONNX Runtime")
      .example("apply MODEL --remove-heads '{\"0\": [1]}' -o out/p --onnx",
               "the same inside an exported folder (onnx/model.onnx)");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  pruner::check_onnx_target(out, vm.count("force") > 0);  // before the (slow) load
  log::info("loading {}", model);
  auto ckpt = models::load_checkpoint(model, globals.torch_device());
  const auto weights = vm.count("external-data") ? pruner::OnnxWeights::external : pruner::OnnxWeights::automatic;
  const auto written =
      pruner::export_onnx(ckpt, out, vm.count("force") > 0, !vm.count("no-sentence-embedding"), weights);
  const auto data_file = written.external_data.empty()
                             ? std::string()
                             : (std::filesystem::path(out).parent_path() /
                                pruner::external_data_name(std::filesystem::path(out).filename().string()))
                                   .string();
  const auto total_bytes = written.bytes.size() + written.external_data.size();
  const nlohmann::json json = {{"file", out},
                               {"bytes", written.bytes.size()},
                               {"external_data", data_file.empty() ? nlohmann::json() : nlohmann::json(data_file)},
                               {"external_data_bytes", written.external_data.size()},
                               {"opset", pruner::kOnnxOpset},
                               {"inputs", written.inputs},
                               {"outputs", written.outputs},
                               {"heads_per_layer", ckpt.model->config().heads_per_layer()}};
  emit_result(json,
              fmt::format("ONNX model written to {}{} ({:.1f} MiB, opset {}; inputs {}; outputs {})\n", out,
                          data_file.empty() ? "" : fmt::format(" with its weights in {}", data_file),
                          static_cast<double>(total_bytes) / (1 << 20), pruner::kOnnxOpset,
                          fmt::join(written.inputs, ", "), fmt::join(written.outputs, ", ")),
              "", vm.count("json") > 0);
  return 0;
}

}  // namespace headprune::cli
