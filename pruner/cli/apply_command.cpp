#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/gguf_model.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/training_flags.h"
#include "pruner/log.h"
#include "pruner/records/gate_state.h"
#include "pruner/surgery/apply.h"
#include "pruner/surgery/gguf_folder.h"
#include "pruner/surgery/mask_rearrangement.h"
#include "pruner/surgery/onnx_export.h"
#include "pruner/surgery/refit.h"
#include "pruner/text/corpus.h"

namespace headprune::cli {

namespace {

/// apply --refit: rebuilds the gates' training share of their text and refits the pruned
/// model on it against the `dense` model. @returns the refit's record.
nlohmann::json refit_from_gates(models::Checkpoint& pruned, const pruner::GateState& gates,
                                const models::Checkpoint& dense, pruner::RefitOptions refit) {
  const auto [text, corpus_options] = pruner::recorded_corpus(gates.settings);
  const auto corpus = pruner::load_training_text(text, pruned, corpus_options);
  refit.batch_size = gates.settings.value("batch_size", refit.batch_size);
  return pruner::refit_pruned_model(*pruned.model, *dense.model, corpus.train, corpus.pad_id, refit).to_json();
}

/// apply --rearrange: rearranges `gates`' mask (in place) on their training share of their text,
/// `ckpt` (the model as trained, before surgery) against the `dense` model. @returns the record.
nlohmann::json rearrange_from_gates(models::Checkpoint& ckpt, pruner::GateState& gates, models::Checkpoint& dense,
                                    pruner::RearrangeOptions rearrange) {
  const auto [text, corpus_options] = pruner::recorded_corpus(gates.settings);
  const auto corpus = pruner::load_training_text(text, ckpt, corpus_options);
  return pruner::rearrange_mask(gates, ckpt, dense, corpus.train, corpus.pad_id, rearrange).to_json();
}

/// --remove-heads' JSON. @throws UsageError with an example when it does not parse.
nlohmann::json parse_remove_heads(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("--remove-heads is not valid JSON ({}); example: "
                                 "'{{\"0\": [1, 5], \"3\": [0]}}'",
                                 e.what()));
  }
}

}  // namespace

int run_apply(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("apply", "apply MODEL (--gates DIR | --remove-heads JSON) -o DIR [--force] [--json]");
  std::string model, gates_dir, remove_heads, out;
  line.positional("model", "MODEL", &model, "checkpoint folder the gates were trained on");
  line.group(group::kRequired).add_options()
      ("gates", arg(&gates_dir, "DIR"), "gates folder written by train-gates")
      ("remove-heads", arg(&remove_heads, "JSON"),
       "instead of --gates: HF-style JSON {\"layer\": [original head indices]}")
      ("out,o", arg(&out, "DIR")->required(), "folder for the pruned checkpoint (new or empty, or --force)");
  line.group(group::kOutput).add_options()
      ("force", "replace what an earlier run wrote in --out (only that: any other file there stops the run, named)")
      ("no-fold", "keep kept heads at gate 1 instead of folding their gate values into the "
                  "output projection")
      ("onnx", "also write onnx/model.onnx (the pruned model for ONNX Runtime, as export-onnx)")
      ("gguf", "also write model.gguf (the pruned LLaMA model for llama.cpp, F32, as export-gguf)")
      ("json", "print the result as JSON on stdout");
  RefitFlags refit_flags;
  add_refit_flags(line, refit_flags, "the training share of the text the gates were trained on (needs --gates)");
  line.example("apply MODEL --gates out/gates -o out/pruned", "remove the heads the trained gates closed")
      .example("apply MODEL --remove-heads '{\"0\": [1, 5], \"3\": [0]}' -o out/pruned",
               "remove heads 1 and 5 of layer 0 and head 0 of layer 3")
      .example("apply MODEL --gates out/gates --refit output -o out/pruned",
               "remove the closed heads, then refit each layer's output projection on the gates' training text");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (vm.count("gates") == vm.count("remove-heads"))
    throw UsageError("give exactly one of --gates GATES_DIR or --remove-heads JSON");
  const auto device = globals.torch_device();
  const auto refit = refit_options(refit_flags, vm, device);
  if (refit.method != pruner::RefitMethod::kNone && !vm.count("gates"))
    throw UsageError("--refit needs --gates: it refits on the text the gates were trained on");
  auto rearrange = rearrange_options(refit_flags, vm, device);
  rearrange.fold_gates = !vm.count("no-fold");
  if (rearrange.enabled && !vm.count("gates"))
    throw UsageError("--rearrange needs --gates: it rearranges the gates' mask on the text they were trained on");
  // Validate everything that can be validated before loading weights or writing anything.
  std::optional<pruner::GateState> gates;
  nlohmann::json spec;
  if (!gates_dir.empty()) {
    gates = pruner::GateState::load(gates_dir);
    if (!gates->complete)
      throw Error(fmt::format("{} holds a snapshot of an unfinished run (step {}); finish it with "
                              "train-gates --resume",
                              gates_dir, gates->step));
  } else {
    spec = parse_remove_heads(remove_heads);
  }
  log::info("loading {}", model);
  auto ckpt = models::load_checkpoint(model, device);
  if (vm.count("gguf")) models::check_gguf_exportable(ckpt);  // before the surgery
  // --rearrange and --refit compare with the dense model: a copy, before trained weights load.
  std::optional<models::Checkpoint> dense;
  if (rearrange.enabled || refit.method != pruner::RefitMethod::kNone) dense = models::copy_checkpoint(ckpt);
  if (gates) pruner::load_trained_weights(*gates, gates_dir, ckpt);
  const bool fold = !vm.count("no-fold");
  nlohmann::json record = {{"command", "apply"}, {"source", model}, {"fold_gates", fold}};
  if (rearrange.enabled) record["rearranged"] = rearrange_from_gates(ckpt, *gates, *dense, rearrange);
  auto plan = gates ? pruner::plan_from_gates(*gates, *ckpt.model, fold)
                    : pruner::plan_from_remove_heads(spec, ckpt.model->config());
  if (gates) record["gates"] = {{"path", gates_dir}, {"settings", gates->settings}};
  else record["remove_heads"] = spec;
  auto result = pruner::apply_in_memory(ckpt, plan);
  if (refit.method != pruner::RefitMethod::kNone) record["refit"] = refit_from_gates(ckpt, *gates, *dense, refit);
  pruner::LateFiles late;
  if (vm.count("onnx") || vm.count("gguf"))
    late = [&](const pruner::ApplyResult&) -> std::map<std::string, std::string> {
      std::map<std::string, std::string> files;
      if (vm.count("onnx")) files.merge(pruner::onnx_folder_files(ckpt));
      if (vm.count("gguf")) files.merge(pruner::gguf_folder_files(ckpt, out));
      return files;
    };
  pruner::export_and_verify(result, ckpt, out, vm.count("force") > 0, record, device, {}, late);
  if (vm.count("json"))
    std::cout << result.to_json().dump(2) << "\n";
  else
    std::cout << "pruned checkpoint written to " << out << "\n" << result.describe();
  return 0;
}

}  // namespace headprune::cli
