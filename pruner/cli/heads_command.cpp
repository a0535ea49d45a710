#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/input_file.h"
#include "models/loader.h"
#include "pruner/analysis/head_analysis.h"
#include "pruner/analysis/head_roles_svg.h"
#include "pruner/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"

namespace headprune::cli {
namespace {

std::vector<std::string> read_lines(const std::string& file) {
  auto in = models::open_input_file(file, "--data");
  std::vector<std::string> lines;
  for (std::string text; std::getline(in, text);) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    lines.push_back(text);
  }
  return lines;
}

/// --data's lines and --conllu's sentences, prepared for the model.
pruner::AnalysisInput analysis_input(const models::Checkpoint& ckpt, const std::string& data, const std::string& conllu) {
  const auto max_length = static_cast<std::size_t>(ckpt.max_seq_length);
  pruner::AnalysisInput input;
  if (!data.empty()) input = pruner::sentences_from_text(*ckpt.tokenizer, read_lines(data), max_length);
  if (!conllu.empty()) pruner::append_treebank(input, *ckpt.tokenizer, conllu, max_length);
  if (input.sentences.empty()) throw Error("--data and --conllu hold no sentence to analyse");
  return input;
}

/// --gates DIR: a gates folder (train-gates --out), or a prune output, whose headprune/ holds
/// the gates it was pruned with.
std::filesystem::path gates_folder(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir / "gates.json") && std::filesystem::exists(dir / "headprune" / "gates.json"))
    return dir / "headprune";
  return dir;
}

}  // namespace

int run_heads(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("heads",
                   "heads MODEL (--data FILE | --conllu FILE)... [--gates DIR] [--json] [--out FILE] [--svg FILE]");
  std::string model, data, conllu, gates_dir, out, svg;
  pruner::AnalysisOptions options;
  line.positional("model", "MODEL", &model, "checkpoint folder (or llama2.c .bin file)");
  line.group(group::kRequired).add_options()
      ("data", arg(&data, "FILE"), "UTF-8 text, one sentence per line (positional, rare-token, sink roles)")
      ("conllu", arg(&conllu, "FILE"),
       "dependency treebank in CoNLL-U (e.g. Universal Dependencies): its sentences, and the "
       "syntactic roles");
  line.group(group::kOptions).add_options()
      ("gates", arg(&gates_dir, "DIR"),
       "gates trained on MODEL (a train-gates folder, or the folder prune wrote): show each head's "
       "log_alpha and whether it is kept, and count the roles of kept and removed heads")
      ("batch-size", arg(&options.batch_size, "N", options.batch_size), "sentences per batch")
      ("importance-sentences", arg(&options.importance_sentences, "N", options.importance_sentences),
       "measure each head's importance (loss when it alone is removed) on the first N sentences; "
       "one forward pass per head and batch; 0 skips it");
  line.group(group::kOutput).add_options()
      ("json", "print the analysis as JSON on stdout")
      ("out", arg(&out, "FILE"), "also write the JSON to FILE")
      ("svg", arg(&svg, "FILE"), "also draw the roles as a grid of layers x heads (SVG)");
  line.example("heads out/minilm --conllu en_ewt-ud-dev.conllu", "roles of every head on a treebank")
      .example("heads MODEL --data text.txt --gates out/gates-50 --json", "which roles the gates keep")
      .example("heads MODEL --conllu en_ewt-ud-dev.conllu --gates out/minilm-50 --svg roles.svg",
               "the same for the gates a prune used, as a picture");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (data.empty() && conllu.empty()) throw UsageError("give --data FILE, --conllu FILE or both");
  if (options.batch_size < 1) throw UsageError("--batch-size must be >= 1");
  std::optional<pruner::GateState> gates;
  if (!data.empty()) models::open_input_file(data, "--data");  // before the model loads
  if (!conllu.empty()) models::open_input_file(conllu, "--conllu");
  if (!gates_dir.empty()) gates = pruner::GateState::load(gates_folder(gates_dir));
  options.device = globals.torch_device();
  models::require_tokenizer_files(model, "heads");
  auto ckpt = models::load_checkpoint(model, options.device);
  const auto input = analysis_input(ckpt, data, conllu);
  log::info("analysing {} heads on {} sentences", ckpt.model->config().total_heads(), input.sentences.size());
  const auto analysis = pruner::analyze_heads(ckpt, input, options, std::move(gates));
  const auto summary = fmt::format("{} sentences, {} tokens, {:.1f} s; heads per role: {}\n", analysis.sentences,
                                   analysis.tokens, analysis.seconds, analysis.role_counts().dump());
  emit_result(analysis.to_json(), analysis.table() + "\n" + summary, out, vm.count("json") > 0);
  if (!svg.empty()) pruner::write_file_atomic(svg, pruner::roles_svg(analysis, analysis.num_attention_heads));
  return 0;
}

}  // namespace headprune::cli
