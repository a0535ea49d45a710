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

/// --remove-heads' or --remove-ffn's JSON (`flag`; empty text: {}).
/// @throws UsageError with an example when it does not parse.
nlohmann::json parse_removal(const std::string& text, const char* flag) {
  if (text.empty()) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{} is not valid JSON ({}); example: '{{\"0\": [1, 5], \"3\": [0]}}'", flag,
                                 e.what()));
  }
}

/// What apply removes: the heads (and FFN blocks) trained gates closed, or hand-written lists.
struct Removal {
  std::string gates_dir;
  std::optional<pruner::GateState> gates;
  nlohmann::json heads, ffn;  ///< --remove-heads / --remove-ffn ({} when not given)

  /// The plan for `model` (with trained weights already loaded).
  pruner::PrunePlan plan(const models::AttentionModel& model, bool fold) const {
    if (gates) return pruner::plan_from_gates(*gates, model, fold);
    return pruner::with_removed_ffn(pruner::plan_from_remove_heads(heads, model.config()), ffn, model.config());
  }
  /// What the export's record says about it.
  void record_into(nlohmann::json& record) const {
    if (gates) {
      record["gates"] = {{"path", gates_dir}, {"settings", gates->settings}};
      return;
    }
    record["remove_heads"] = heads;
    if (!ffn.empty()) record["remove_ffn"] = ffn;
  }
};

/// Reads --gates (refusing an unfinished run) or parses the removal lists, before any weight loads.
Removal read_removal(const std::string& gates_dir, const std::string& remove_heads, const std::string& remove_ffn) {
  Removal r;
  r.gates_dir = gates_dir;
  if (gates_dir.empty()) {
    r.heads = parse_removal(remove_heads, "--remove-heads");
    r.ffn = parse_removal(remove_ffn, "--remove-ffn");
    return r;
  }
  r.gates = pruner::GateState::load(gates_dir);
  if (!r.gates->complete)
    throw Error(fmt::format("{} holds a snapshot of an unfinished run (step {}); finish it with "
                            "train-gates --resume",
                            gates_dir, r.gates->step));
  return r;
}

}  // namespace

int run_apply(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("apply", "apply MODEL (--gates DIR | --remove-heads JSON | --remove-ffn JSON) -o DIR [--force] [--json]");
  std::string model, gates_dir, remove_heads, remove_ffn, out;
  line.positional("model", "MODEL", &model, "checkpoint folder the gates were trained on");
  line.group(group::kRequired).add_options()
      ("gates", arg(&gates_dir, "DIR"), "gates folder written by train-gates")
      ("remove-heads", arg(&remove_heads, "JSON"),
       "instead of --gates: HF-style JSON {\"layer\": [original head indices]}")
      ("remove-ffn", arg(&remove_ffn, "JSON"),
       "instead of --gates (alone or with --remove-heads): JSON {\"layer\": [FFN neuron positions among the "
       "layer's present ones]}")
      ("out,o", arg(&out, "DIR")->required(), "folder for the pruned checkpoint (new or empty, or --force)");
  line.group(group::kOutput).add_options()
      ("force", "replace what an earlier run wrote in --out (only that: any other file there stops the run, named)")
      ("no-fold", "keep kept heads at gate 1 instead of folding their gate values into the "
                  "output projection")
      ("onnx", "also write onnx/model.onnx (the pruned model for ONNX Runtime, as export-onnx)")
      ("gguf", "also write model.gguf (the pruned LLaMA model for llama.cpp, F32, as export-gguf)")
      ("json", "print the result as JSON on stdout");
  RefitFlags refit_flags;
  add_refit_flags(line, refit_flags, "the training share of the text the gates were trained on (needs --gates)",
                  "before removing heads");
  line.example("apply MODEL --gates out/gates -o out/pruned", "remove the heads the trained gates closed")
      .example("apply MODEL --remove-heads '{\"0\": [1, 5], \"3\": [0]}' -o out/pruned",
               "remove heads 1 and 5 of layer 0 and head 0 of layer 3")
      .example("apply MODEL --remove-ffn '{\"1\": [0, 1, 2, 3]}' -o out/pruned",
               "remove the first four FFN neurons of layer 1")
      .example("apply MODEL --gates out/gates --refit output -o out/pruned",
               "remove the closed heads, then refit each layer's output projection on the gates' training text");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (vm.count("gates") == (vm.count("remove-heads") + vm.count("remove-ffn") > 0 ? 1U : 0U))
    throw UsageError("give --gates GATES_DIR, or --remove-heads JSON and/or --remove-ffn JSON");
  const auto device = globals.torch_device();
  const auto refit = refit_options(refit_flags, vm, device);
  if (refit.method != pruner::RefitMethod::kNone && !vm.count("gates"))
    throw UsageError("--refit needs --gates: it refits on the text the gates were trained on");
  auto rearrange = rearrange_options(refit_flags, vm, device);
  rearrange.fold_gates = !vm.count("no-fold");
  if (rearrange.enabled && !vm.count("gates"))
    throw UsageError("--rearrange needs --gates: it rearranges the gates' mask on the text they were trained on");
  // Validate everything that can be validated before loading weights or writing anything.
  auto removal = read_removal(gates_dir, remove_heads, remove_ffn);
  auto& gates = removal.gates;
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
  const auto plan = removal.plan(*ckpt.model, fold);
  removal.record_into(record);
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
