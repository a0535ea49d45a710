#include "pruner/cli/option_table.h"

#include "pruner/cli/command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace headprune::cli {
namespace {

/// A table cell: pipes escaped, empty shown as a dash.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out.empty() ? "–" : out;
}

std::string code(const std::string& text) { return text.empty() ? "–" : "`" + text + "`"; }

}  // namespace

const std::vector<VocabularyEntry>& vocabulary() {
  static const std::vector<VocabularyEntry> entries = {
      {"checkpoint folder (input)", "MODEL (first argument)", "model", "every command"},
      {"folder the command writes", "-o, --out DIR", "out", "prune, sweep, apply, train-gates, convert-llama2c, convert-gguf"},
      {"file a command writes (not a folder)", "--json-file FILE, --embeddings FILE, --svg FILE", "",
       "bench, bench-training; embed; report"},
      {"replace an earlier result", "--force", "", "every command with --out"},
      {"text to train or measure on", "--data FILE...", "data", "prune, sweep, train-gates, eval, embed"},
      {"sequences per step or per batch", "--batch-size N", "batch_size",
       "train-gates, prune, sweep, eval, embed, bench, bench-training"},
      {"tokens per sequence, longer text truncated", "--max-length N", "max_length",
       "train-gates, prune, sweep, eval"},
      {"exact sequence length of a timed shape or a FLOPs count", "--seq-len N", "seq_len",
       "bench, bench-training, inspect"},
      {"benchmark shapes inside prune / sweep", "--bench-batch-size, --bench-seq-len", "batch_size, seq_len",
       "prune, sweep (summary.json bench.results[])"},
      {"fraction of heads (or unit) to remove", "--target-sparsity S", "target_sparsity",
       "train-gates, prune; sweep --targets"},
      {"STS Benchmark file", "--sts FILE", "sts", "eval, sweep"},
      {"tokens to generate", "--max-new-tokens N", "max_new_tokens", "generate"},
      {"heads of the source (dense) model", "", "heads_total", "report, summary.json, gates.json"},
      {"heads kept after pruning", "", "heads_kept", "report, summary.json, gates.json"},
      {"heads in this checkpoint", "", "heads", "inspect"},
      {"heads in each layer", "", "heads_per_layer", "inspect, report, summary.json"},
      {"measured speedup (dense time / pruned time)", "", "speedup", "bench, summary.json, sweep.json"},
      {"median milliseconds per call", "", "dense_ms.median, pruned_ms.median", "bench, summary.json"},
      {"results as JSON on stdout", "--json", "", "every command that produces results"},
  };
  return entries;
}

std::vector<OptionRow> all_option_rows() {
  DescribeScope scope;
  GlobalOptions g;
  for (const auto& c : commands()) {
    try {
      c.run({}, g);
    } catch (const DescribeOnly&) {
    }
  }
  return scope.rows();
}

std::string option_table_markdown(const std::vector<OptionRow>& rows) {
  std::string out =
      "| concept | flag | JSON field | where |\n"
      "|---|---|---|---|\n";
  for (const auto& v : vocabulary())
    out += fmt::format("| {} | {} | {} | {} |\n", v.concept_name, code(v.flag), code(v.json_key), v.where);
  out +=
      "\n| command | group | option | value (default) | meaning | old spelling (still accepted) |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& r : rows)
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.command, r.group, code(r.flag),
                       code(r.metavar), cell(r.help), r.aliases.empty() ? "–" : code(fmt::format("{}", fmt::join(r.aliases, ", "))));
  return out;
}

}  // namespace headprune::cli
