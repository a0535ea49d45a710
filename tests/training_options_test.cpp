// The option table: each training option declared once, from which the flags, the gates.json
// record and the --resume check are made.
#include <catch2/catch.hpp>

#include <set>

#include "models/errors.h"
#include "pruner/training/training_options.h"

namespace hp = headprune;
namespace po = boost::program_options;

namespace {

/// Parses `args` with the table's flags, as the train-gates command does.
hp::pruner::TrainingSettings parse(std::vector<std::string> args) {
  po::options_description desc;
  hp::pruner::add_training_options([&](const std::string&) -> po::options_description& { return desc; });
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  return hp::pruner::training_settings(vm, 5, torch::kCPU);
}

}  // namespace

CATCH_TEST_CASE("gates.json records exactly the table's recorded rows", "[options]") {
  std::set<std::string> table_keys;
  for (const auto& row : hp::pruner::training_option_table())
    if (!row.json_key.empty()) table_keys.insert(row.json_key);
  const auto record = hp::pruner::GateTrainingOptions().to_json();
  std::set<std::string> recorded;
  for (const auto& [key, value] : record.items()) recorded.insert(key);
  CATCH_CHECK(recorded == table_keys);
  // Every setting gates.json records (docs/formats.md: "settings").
  CATCH_CHECK(recorded == std::set<std::string>{
                              "steps", "batch_size", "learning_rate", "lambda_learning_rate", "lambda_damping",
                              "target_sparsity", "target_params", "target_flops", "target_latency", "target_kv_bytes", "latency_shape", "sparsity_unit", "flops_seq_len", "l0_lambda",
                              "warmup_steps", "max_extra_steps", "beta", "gamma", "zeta", "log_alpha_init", "rule",
                              "min_heads_per_layer", "gqa_mode", "uniform_layers", "prune", "ffn_block", "head_multiple", "embedding_weight", "distill_layers",
                              "label_weight", "train_weights", "teacher_top_k",
                              "finetune_steps", "finetune_pruned_layers", "weights_learning_rate", "seed", "corpus"});
}

CATCH_TEST_CASE("flags land in the settings, their defaults where not given", "[options]") {
  const auto s = parse({"--data", "a.txt", "b.txt", "--target-sparsity", "0.25", "--lr", "0.05",
                        "--max-length", "64", "--gqa-mode", "groups", "--paragraphs"});
  CATCH_CHECK(s.text.data == std::vector<std::filesystem::path>{"a.txt", "b.txt"});
  CATCH_CHECK(!s.text.labelled());
  CATCH_CHECK(s.training.target_sparsity == 0.25);
  CATCH_CHECK(s.training.learning_rate == 0.05);
  CATCH_CHECK(s.training.lambda_learning_rate == 0.1);
  CATCH_CHECK(s.training.lambda_damping == 20);
  CATCH_CHECK(s.training.steps == 300);
  CATCH_CHECK(s.corpus.max_length == 64);
  CATCH_CHECK(s.training.flops_seq_len == 64);
  CATCH_CHECK(s.corpus.paragraphs);
  CATCH_CHECK(s.training.constraints.group_rule == hp::gates::GroupRule::kWholeGroups);
  CATCH_CHECK(s.training.seed == 5);
  CATCH_CHECK(s.corpus.seed == 5);
  const auto record = s.training.to_json();
  CATCH_CHECK(record.at("gqa_mode") == "groups");
  CATCH_CHECK(record.at("finetune_steps").is_null());  // recorded only with --train-weights
  CATCH_CHECK(record.at("finetune_pruned_layers").is_null());
  CATCH_CHECK(record.at("label_weight").is_null());    // recorded only with --labels
  CATCH_CHECK(record.at("corpus").contains("data"));
  CATCH_CHECK(parse({"--data", "a", "--l0-lambda", "0.1", "--allow-empty-layers"})
                  .training.constraints.min_heads_per_layer == 0);
}

CATCH_TEST_CASE("bad values and combinations are usage errors naming the flag", "[options]") {
  using hp::UsageError;
  CATCH_CHECK_THROWS_AS(parse({"--data", "a"}), UsageError);  // neither target nor lambda
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--target-sparsity", "1"}),
                          "--target-sparsity 1 is outside [0, 1)");
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--l0-lambda", "1", "--steps", "0"}),
                          "--steps must be >= 1");
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--target-sparsity", "0.5", "--lambda-damping=-1"}),
                          Catch::Contains("--lambda-damping") && Catch::Contains("finite and >= 0"));
  CATCH_CHECK(parse({"--data", "a", "--target-sparsity", "0.5", "--lambda-damping", "0"}).training.lambda_damping == 0);
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--target-sparsity", "0.5", "--finetune-pruned-layers"}),
                          Catch::Contains("add --train-weights"));
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--l0-lambda", "1", "--holdout", "1"}),
                          "--holdout must be in (0, 1)");
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--l0-lambda", "1", "--max-extra-steps", "-2"}),
                          "--max-extra-steps must be >= -1");
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--l0-lambda", "1", "--distill-layers", "-1"}),
                          "--distill-layers must be >= 0");
  CATCH_CHECK_THROWS_AS(parse({"--data", "a", "--l0-lambda", "1", "--gate-rule", "x"}), UsageError);
  CATCH_CHECK_THROWS_AS(parse({"--data", "a", "--l0-lambda", "1", "--sparsity-unit", "x"}), UsageError);
  // The text: exactly one of --data and --labels; the labels' own flags only with --labels.
  CATCH_CHECK_THROWS_WITH(parse({"--target-sparsity", "0.5"}), Catch::Contains("--data FILE... (plain text) or --labels"));
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--labels", "b", "--target-sparsity", "0.5"}),
                          Catch::Contains("one of the two"));
  CATCH_CHECK_THROWS_WITH(parse({"--data", "a", "--target-sparsity", "0.5", "--label-weight", "0.5"}),
                          "--label-weight has no effect without --labels");
  CATCH_CHECK_THROWS_WITH(parse({"--labels", "a", "--target-sparsity", "0.5", "--paragraphs"}),
                          Catch::Contains("--paragraphs does not apply to --labels"));
  CATCH_CHECK_THROWS_WITH(parse({"--labels", "a", "--target-sparsity", "0.5", "--label-weight", "0"}),
                          "--label-weight must be in (0, 1]");
}

CATCH_TEST_CASE("labelled text is recorded as such, with its weight", "[options]") {
  const auto s = parse({"--labels", "dev.tsv", "--target-sparsity", "0.5", "--label-weight", "0.5"});
  CATCH_CHECK(s.text.labelled());
  CATCH_CHECK(s.text.data.empty());
  const auto record = s.training.to_json();
  CATCH_CHECK(record.at("label_weight") == 0.5);
  CATCH_CHECK(record.at("corpus").contains("labels"));
  CATCH_CHECK(!record.at("corpus").contains("data"));
  const auto [text, options] = hp::pruner::recorded_corpus(record);
  CATCH_CHECK(text.labelled());
  CATCH_CHECK(text.labels.filename() == "dev.tsv");
  CATCH_CHECK(parse({"--labels", "dev.tsv", "--target-sparsity", "0.5"}).training.label_weight ==
              hp::pruner::kDefaultLabelWeight);
}

CATCH_TEST_CASE("resuming refuses a changed recorded setting and allows a changed log interval",
                "[options]") {
  const auto start = parse({"--data", "a", "--target-sparsity", "0.5"}).training;
  const auto recorded = start.to_json();
  CATCH_CHECK(parse({"--data", "a", "--target-sparsity", "0.5", "--log-every", "3"})
                  .training.resume_difference(recorded)
                  .empty());
  CATCH_CHECK(parse({"--data", "a", "--target-sparsity", "0.5", "--beta", "0.33"})
                  .training.resume_difference(recorded) ==
              "setting 'beta' was 0.6666666666666666 when the run started, now 0.33");
  // The corpus is part of the run: other text or another split is not a continuation.
  CATCH_CHECK_THAT(parse({"--data", "b", "--target-sparsity", "0.5"}).training.resume_difference(recorded),
                   Catch::StartsWith("setting 'corpus' was"));
  CATCH_CHECK_THAT(parse({"--data", "a", "--target-sparsity", "0.5", "--holdout", "0.2"})
                       .training.resume_difference(recorded),
                   Catch::StartsWith("setting 'corpus' was"));
  CATCH_CHECK(parse({"--data", "./a", "--target-sparsity", "0.5"}).training.resume_difference(recorded).empty());
}
