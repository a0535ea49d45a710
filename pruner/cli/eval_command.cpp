#include <iostream>

#include <fmt/format.h>

#include "models/checkpoint.h"
#include "models/errors.h"
#include "pruner/measure/classification.h"
#include "pruner/cli/command.h"
#include "pruner/training/corpus.h"
#include "pruner/measure/fidelity.h"
#include "pruner/log.h"
#include "pruner/measure/sts.h"

namespace headprune::cli {

int run_eval(const std::vector<std::string>& args, const GlobalOptions& globals) {
  po::options_description desc("eval options");
  std::string model, sts, teacher, data, classification;
  std::size_t batch_size = 64, max_length = 128;
  desc.add_options()
      ("model", po::value<std::string>(&model)->required(), "checkpoint folder (positional)")
      ("sts", po::value<std::string>(&sts),
       "STS-Benchmark file (tab-separated; score, sentence1, sentence2 in fields 5-7): Spearman x100")
      ("classification", po::value<std::string>(&classification),
       "labelled sentences (sentence<TAB>label; label = class id or id2label name; a header line "
       "is skipped): accuracy of the model's classifier head")
      ("teacher", po::value<std::string>(&teacher), "dense checkpoint to measure fidelity against")
      ("data", po::value<std::string>(&data), "with --teacher: held-out text, one sentence per line")
      ("max-length", po::value<std::size_t>(&max_length)->default_value(max_length),
       "tokens per sentence for --data")
      ("batch-size", po::value<std::size_t>(&batch_size)->default_value(batch_size), "sentences per batch")
      ("json", "print JSON");
  po::variables_map vm;
  if (!parse_args(args, "headprune eval MODEL [--sts FILE] [--classification FILE] [--teacher DENSE --data TEXT] [--json]",
                  desc, {"model"}, vm))
    return 0;
  if (sts.empty() && teacher.empty() && classification.empty())
    throw UsageError("give at least one of --sts FILE, --classification FILE, --teacher DENSE --data TEXT");
  if (teacher.empty() != data.empty()) throw UsageError("--teacher and --data go together");
  if (batch_size < 1) throw UsageError("--batch-size must be >= 1");
  if (max_length < 3) throw UsageError("--max-length must be >= 3");
  const auto device = globals.torch_device();
  auto ckpt = models::load_checkpoint(model, device);
  nlohmann::json result = {{"model", model}};
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
    if (!ckpt.tokenizer) throw Error(fmt::format("{} has no tokenizer (vocab.txt or tokenizer.bin)", model));
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
