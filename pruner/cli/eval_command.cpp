#include <iostream>

#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/input_file.h"
#include "models/loader.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/dtype_option.h"
#include "pruner/log.h"
#include "pruner/measure/classification.h"
#include "pruner/measure/fidelity.h"
#include "pruner/measure/sts.h"
#include "pruner/text/corpus.h"

namespace headprune::cli {

int run_eval(const std::vector<std::string>& args, const GlobalOptions& globals) {
  CommandLine line("eval", "eval MODEL [--sts FILE] [--classification FILE] [--teacher DENSE --data FILE] [--json]");
  std::string model, sts, teacher, data, classification;
  std::size_t batch_size = 64, max_length = 128;
  DtypeOption dtype;
  line.positional("model", "MODEL", &model, "checkpoint folder");
  line.group("Measures (at least one)").add_options()
      ("sts", arg(&sts, "FILE"),
       "STS Benchmark file: Spearman x100 (tab-separated with score, sentence1, sentence2 in fields "
       "5-7, or the Hugging Face CSV with a sentence1,sentence2,score header)")
      ("classification", arg(&classification, "FILE"),
       "labelled sentences (sentence<TAB>label; label = class id or id2label name; a header line "
       "is skipped): accuracy of the model's classifier head")
      ("teacher", arg(&teacher, "DENSE"), "dense checkpoint to measure fidelity against (with --data)")
      ("data", arg(&data, "FILE"), "with --teacher: held-out text, one sentence per line");
  line.group(group::kOptions).add_options()
      ("max-length", arg(&max_length, "N", max_length), "tokens per sentence for --data")
      ("batch-size", arg(&batch_size, "N", batch_size), "sentences per batch")
      ("json", "print JSON");
  dtype.add_to(line.group(group::kOptions));
  line.example("eval .cache/models/all-MiniLM-L6-v2 --sts sts-dev.csv", "the baseline's STS-B quality")
      .example("eval out/minilm-50 --teacher .cache/models/all-MiniLM-L6-v2 --data held-out.txt",
               "how close the pruned model's embeddings stay to the dense model's");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (sts.empty() && teacher.empty() && classification.empty())
    throw UsageError("give at least one of --sts FILE, --classification FILE, --teacher DENSE --data TEXT");
  if (teacher.empty() != data.empty()) throw UsageError("--teacher and --data go together");
  if (batch_size < 1) throw UsageError("--batch-size must be >= 1");
  if (max_length < 3) throw UsageError("--max-length must be >= 3");
  dtype.scalar_type();  // a bad --dtype is a usage error before anything loads
  const auto device = globals.torch_device();
  // Every input is checked before the model loads.
  for (const auto& [file, what] : {std::pair{sts, "--sts"}, {classification, "--classification"}, {data, "--data"}})
    if (!file.empty()) models::open_input_file(file, what);
  models::require_tokenizer_files(model, "eval");
  auto ckpt = models::load_checkpoint(model, device);
  dtype.apply(ckpt);  // MODEL only: a --teacher stays float32, the reference
  nlohmann::json result = {{"model", model}, {"dtype", dtype.name}};
  if (!sts.empty()) {
    auto pairs = pruner::read_sts(sts);
    log::info("STS: embedding {} sentence pairs", pairs.size());
    auto r = pruner::evaluate_sts(ckpt, pairs, batch_size, device);
    result["sts"] = {{"file", sts}, {"pairs", r.pairs}, {"spearman", r.spearman_x100}};
    if (!vm.count("json")) std::cout << fmt::format("STS {}: spearman x100 = {:.2f} ({} pairs)\n", sts, r.spearman_x100, r.pairs);
  }
  if (!classification.empty()) {
    const auto& labels = pruner::classifier_labels(ckpt);
    auto examples = pruner::read_labelled_texts(classification, labels);
    log::info("classification: {} labelled sentences", examples.size());
    auto r = pruner::evaluate_classification(ckpt, examples, batch_size, device);
    result["classification"] = r.to_json(labels);
    result["classification"]["file"] = classification;
    if (!vm.count("json"))
      std::cout << fmt::format("classification {}: accuracy {:.2f}% ({} of {})\n", classification,
                               100.0 * r.accuracy, r.correct, r.examples);
  }
  if (!teacher.empty()) {
    auto dense = models::load_checkpoint(teacher, device);
    pruner::CorpusOptions co;
    co.max_length = max_length;
    co.holdout_fraction = 0.5;
    co.seed = globals.seed;
    auto corpus = pruner::load_corpus({data}, *ckpt.tokenizer, co);
    auto all = corpus.train;
    all.insert(all.end(), corpus.heldout.begin(), corpus.heldout.end());
    auto f = pruner::measure_fidelity(*ckpt.model, nullptr, *dense.model, all, corpus.pad_id,
                                      dense.pooling, batch_size, device);
    result["fidelity"] = f.to_json();
    result["fidelity"]["teacher"] = teacher;
    if (!vm.count("json"))
      std::cout << fmt::format("fidelity to {} on {}\n", teacher, f.describe());
  }
  if (vm.count("json")) std::cout << result.dump(2) << "\n";
  return 0;
}

}  // namespace headprune::cli
