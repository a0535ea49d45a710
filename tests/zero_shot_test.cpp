// `eval --task`: zero-shot multiple choice against lm-evaluation-harness 0.4.13 itself
// (tests/fixtures/zero_shot/*.json from tools/make_zero_shot_fixtures.py: lm-eval's HF backend
// on the original splits, the same questions), and the task files' refusals.
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/loader.h"
#include "pruner/jobs/quality_measure.h"
#include "pruner/measure/zero_shot.h"
#include "pruner/text/multiple_choice.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"
#include "tests/tolerance.h"

using namespace headprune;

namespace {

nlohmann::json lm_eval_reference(const std::string& model) {
  std::ifstream in(testing::fixture_path("zero_shot/" + model + ".json"));
  return nlohmann::json::parse(in);
}

/// Largest |logit| of the model on the task's first answer: the scale of the float32 bound.
double logit_scale(models::Checkpoint& ckpt, const pruner::MultipleChoiceQuestion& q) {
  const auto pair = pruner::scoring_pair(*ckpt.tokenizer, q.context, q.choices[0], "scale");
  auto ids = pair.context;
  ids.insert(ids.end(), pair.continuation.begin(), pair.continuation.end());
  torch::NoGradGuard no_grad;
  const auto input = torch::tensor(ids, torch::kLong).unsqueeze(0).to(testing::test_device());
  return ckpt.model->forward({input, torch::ones_like(input), {}}, nullptr).logits.abs().max().item<double>();
}

/// Scores the fixture tasks with `ckpt` and checks each answer's log-likelihood against lm-eval's
/// (a sum of `tokens` log-probabilities, each within twice the logits' float32 bound), and the
/// choice, acc and acc_norm of every question whose best two answers lie further apart than that.
/// Returns how many questions were decided.
int check_against_lm_eval(models::Checkpoint& ckpt, const nlohmann::json& reference) {
  int decided = 0;
  for (const auto& [name, expected] : reference.at("tasks").items()) {
    const auto task = pruner::read_multiple_choice(testing::fixture_path("zero_shot/tasks/" + name + ".jsonl"));
    const auto score = pruner::score_multiple_choice(ckpt, task, 5, testing::test_device());
    const double per_token = 2 * testing::float32_tolerance(logit_scale(ckpt, task.questions[0]),
                                                            ckpt.model->config().num_hidden_layers,
                                                            std::max(ckpt.model->config().hidden_size,
                                                                     ckpt.model->config().intermediate_size));
    CATCH_REQUIRE(expected.at("questions").size() == task.questions.size());
    for (const auto& q : expected.at("questions")) {
      const auto& ours = score.questions.at(q.at("index").get<std::size_t>());
      const auto lls = q.at("log_likelihoods").get<std::vector<double>>();
      CATCH_REQUIRE(lls.size() == ours.choices.size());
      double tol = 0;
      for (std::size_t c = 0; c < lls.size(); ++c) {
        const double bound = per_token * static_cast<double>(ours.choices[c].tokens);
        tol = std::max(tol, bound);
        CATCH_INFO(name << " question " << q.at("index") << " choice " << c << ": " << ours.choices[c].log_likelihood
                        << " vs lm-eval " << lls[c] << ", bound " << bound);
        CATCH_CHECK(std::abs(ours.choices[c].log_likelihood - lls[c]) <= bound);
      }
      auto sorted = lls;
      std::sort(sorted.rbegin(), sorted.rend());
      if (sorted[0] - sorted[1] <= 2 * tol) continue;
      ++decided;
      CATCH_CHECK(ours.pred == std::max_element(lls.begin(), lls.end()) - lls.begin());
      CATCH_CHECK((ours.pred == ours.gold) == (q.at("acc").get<double>() == 1.0));
      CATCH_CHECK((ours.pred_norm == ours.gold) == (q.at("acc_norm").get<double>() == 1.0));
    }
  }
  return decided;
}

std::filesystem::path write_task(const std::string& name, const std::string& lines) {
  const auto file = testing::temp_dir("zero-shot") / (name + ".jsonl");
  std::ofstream(file) << lines;
  return file;
}

}  // namespace

CATCH_TEST_CASE("zero-shot log-likelihoods and choices equal lm-evaluation-harness's on two seeded decoders",
                "[zero_shot]") {
  for (const std::string model : {"llama3", "gemma3"}) {
    CATCH_INFO(model);
    auto ckpt = models::load_checkpoint(testing::fixture_path(model), testing::test_device());
    const int decided = check_against_lm_eval(ckpt, lm_eval_reference(model));
    // The seeded models' answers are far apart next to their float32 bound: most questions count.
    CATCH_CHECK(decided >= 16);
  }
}

CATCH_TEST_CASE("zero-shot scores of the real SmolLM2-135M equal lm-evaluation-harness's", "[zero_shot][smollm2]") {
  auto file = testing::env_or("HEADPRUNE_SMOLLM2_GGUF",
                              testing::source_dir() / ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
  if (!std::filesystem::exists(file))
    CATCH_FAIL("SmolLM2 GGUF not found at " << file << ": run scripts/fetch-model SmolLM2-135M-Instruct");
  auto ckpt = models::load_checkpoint(file, testing::test_device());
  check_against_lm_eval(ckpt, lm_eval_reference("smollm2"));
}

CATCH_TEST_CASE("the answer's whitespace rule: a context's trailing spaces move to the continuation", "[zero_shot]") {
  auto ckpt = models::load_checkpoint(testing::fixture_path("llama3"), testing::test_device());
  const auto& tok = *ckpt.tokenizer;
  const auto spaced = pruner::scoring_pair(tok, "To be or not to be ", "that", "t");
  CATCH_CHECK(spaced.context == tok.prompt_ids("To be or not to be"));
  const auto whole = tok.prompt_ids("To be or not to be  that");
  CATCH_CHECK(std::vector<int64_t>(whole.begin() + static_cast<std::ptrdiff_t>(spaced.context.size()), whole.end()) ==
              spaced.continuation);
  const auto plain = pruner::scoring_pair(tok, "To be or not to be", "that", "t");
  CATCH_CHECK(plain.continuation != spaced.continuation);
}

CATCH_TEST_CASE("a bad task file is refused naming the line and what is wrong", "[zero_shot]") {
  const std::string good = R"({"id": 1, "context": "Q", "choices": ["a", "b"], "gold": 1})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"id": 1, "context": "Q", "choices": ["a", "b"]})", "required key 'gold' is missing"},
      {R"({"id": 1, "choices": ["a", "b"], "gold": 0})", "required key 'context' is missing"},
      {R"({"id": 1, "context": "Q", "choices": ["a", "b"], "gold": 2})", "'gold' 2 is out of range for 2 choices"},
      {R"({"id": 1, "context": "Q", "choices": ["a", "b"], "gold": -1})", "'gold' -1 is out of range"},
      {R"({"id": 1, "context": "Q", "choices": ["a", ""], "gold": 0})", "choice 1 is empty"},
      {R"({"id": 1, "context": "", "choices": ["a", "b"], "gold": 0})", "'context' is empty"},
      {R"({"id": 1, "context": "Q", "choices": ["a"], "gold": 0})", "at least 2 are needed"},
      {R"({"id": 1, "context": "Q", "choices": "a b", "gold": 0})", "key 'choices' has the wrong type"},
      {R"({"id": 1.5, "context": "Q", "choices": ["a", "b"], "gold": 0})", "key 'id' must be a string or an integer"},
      {R"({"id": 1, "context": "Q", "choices": ["a", "b"], "gold": 0.5})", "must be an integer"},
      {"not json", "not a JSON object"},
      {R"({"id": 1, "context": "Q", "choices": ["a", "b"], "gold": 0, "target_delimiter": ""})",
       "key 'target_delimiter' is not one headprune reads"},
  };
  for (const auto& [line, message] : cases) {
    CATCH_INFO(line);
    const auto file = write_task("bad", good + "\n" + line + "\n");
    CATCH_CHECK_THROWS_WITH(pruner::read_multiple_choice(file),
                            Catch::Contains(file.string() + ":2: ") && Catch::Contains(message));
  }
  CATCH_CHECK_THROWS_WITH(pruner::read_multiple_choice(write_task("empty", "\n\n")), Catch::Contains("has no questions"));
  CATCH_CHECK(pruner::read_multiple_choice(write_task("limit", good + "\n" + good + "\n" + good + "\n"), 2)
                  .questions.size() == 2);
}

CATCH_TEST_CASE("task names: known ones resolve in the task folder, others are usage errors", "[zero_shot]") {
  const auto dir = testing::temp_dir("tasks");
  CATCH_CHECK_THROWS_AS(pruner::task_file("mmlu", dir), UsageError);
  CATCH_CHECK_THROWS_WITH(pruner::task_file("mmlu", dir), Catch::Contains("unknown task 'mmlu'"));
  CATCH_CHECK_THROWS_WITH(pruner::task_file("piqa", dir), Catch::Contains("run scripts/fetch-data piqa"));
  std::ofstream(dir / "piqa.jsonl") << "";
  CATCH_CHECK(pruner::task_file("piqa", dir) == dir / "piqa.jsonl");
  CATCH_CHECK(pruner::task_file("my/own.jsonl", dir) == "my/own.jsonl");
}

CATCH_TEST_CASE("a question longer than the model's positions is refused before anything is scored", "[zero_shot]") {
  auto ckpt = models::load_checkpoint(testing::fixture_path("llama3"), testing::test_device());
  std::string context = "Question:";
  for (int i = 0; i < 300; ++i) context += " word";
  const auto file = write_task("long", R"({"id": "x", "context": ")" + context + R"(", "choices": ["a", "b"], "gold": 0})" "\n");
  const auto task = pruner::read_multiple_choice(file);
  CATCH_CHECK_THROWS_WITH(pruner::check_multiple_choice(ckpt, task),
                          Catch::Contains("question 0 (id x), choice 0") && Catch::Contains("256 positions"));
  CATCH_CHECK_THROWS_WITH(pruner::score_multiple_choice(ckpt, task, 4, testing::test_device()),
                          Catch::Contains("256 positions"));
  auto encoder = models::load_checkpoint(testing::fixture_path("distilbert"), testing::test_device());
  CATCH_CHECK_THROWS_WITH(pruner::check_multiple_choice(encoder, task), Catch::Contains("needs a causal language model"));
}

CATCH_TEST_CASE("eval --task on the command line: table, JSON, samples, and refusals with their exit codes",
                "[zero_shot][cli]") {
  const auto model = testing::fixture_path("llama3").string();
  const auto tasks = testing::fixture_path("zero_shot/tasks");
  const auto dir = testing::temp_dir("eval-task");
  const auto samples = (dir / "samples.jsonl").string();
  CATCH_CHECK(testing::run_cli({"eval", model, "--task", "piqa,hellaswag", "--task-dir", tasks.string(), "--limit", "3",
                                "--samples", samples, "--json"}) == 0);
  std::ifstream in(samples);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  CATCH_REQUIRE(lines.size() == 6);  // 3 questions of each task
  CATCH_CHECK(lines[0].at("task") == "piqa");
  CATCH_CHECK(lines[0].at("log_likelihoods").size() == 2);
  CATCH_CHECK(lines[5].at("task") == "hellaswag");
  CATCH_CHECK(lines[5].at("index") == 2);
  CATCH_CHECK(testing::run_cli({"eval", model, "--task", "mmlu", "--task-dir", tasks.string()}) == 2);
  CATCH_CHECK(testing::run_cli({"eval", model, "--task", "piqa,", "--task-dir", tasks.string()}) == 2);
  // --limit belongs to --task; without either, the other measures run as before.
  CATCH_CHECK(testing::run_cli({"eval", model, "--limit", "3", "--teacher", model, "--data", samples}) == 2);
  CATCH_CHECK(testing::run_cli({"eval", model, "--teacher", model, "--data", samples}) == 0);
  CATCH_CHECK(testing::run_cli({"eval", model, "--task", "arc_challenge", "--task-dir", tasks.string()}) == 1);
  // An encoder has no LM head: refused, and no samples file is written.
  const auto none = dir / "none.jsonl";
  CATCH_CHECK(testing::run_cli({"eval", testing::fixture_path("distilbert").string(), "--task", "piqa", "--task-dir",
                                tasks.string(), "--samples", none.string()}) == 1);
  CATCH_CHECK_FALSE(std::filesystem::exists(none));
}

CATCH_TEST_CASE("sweep --task judges every model by its mean zero-shot accuracy", "[zero_shot][cli][e2e]") {
  testing::Workspace w("sweep-task");
  const auto model = testing::fixture_path("llama3").string();
  const auto tasks = testing::fixture_path("zero_shot/tasks");
  const auto out = w.dir / "sweep";
  const std::vector<std::string> common = {"sweep", model, "--data", w.corpus.string(), "--targets", "0.5",
                                           "--steps", "4", "--batch-size", "4", "--max-length", "16", "--no-bench",
                                           "--task", "piqa,hellaswag", "--task-dir", tasks.string(),
                                           "--task-limit", "4", "-o"};
  auto args = common;
  args.push_back((w.dir / "both").string());
  args.insert(args.end(), {"--sts", w.corpus.string()});
  CATCH_CHECK(testing::run_cli(args) == 2);  // two quality measures
  CATCH_CHECK_FALSE(std::filesystem::exists(w.dir / "both"));
  // An encoder cannot score the tasks: refused before any training, nothing written.
  args = common;
  args[1] = testing::fixture_path("distilbert").string();
  args.push_back((w.dir / "enc").string());
  CATCH_CHECK(testing::run_cli(args) == 1);
  CATCH_CHECK_FALSE(std::filesystem::exists(w.dir / "enc"));
  args = common;
  args.push_back(out.string());
  CATCH_REQUIRE(testing::run_cli(args) == 0);
  std::ifstream in(out / "sweep.json");
  const auto sweep = nlohmann::json::parse(in);
  CATCH_CHECK(sweep.at("quality") == "zero_shot_acc");
  CATCH_CHECK(sweep.at("tasks").size() == 2);
  // The dense model's quality is the mean acc of the tasks, in percent.
  auto ckpt = models::load_checkpoint(model, testing::test_device());
  double acc = 0;
  for (const auto* name : {"piqa", "hellaswag"})
    acc += pruner::score_multiple_choice(ckpt, pruner::read_multiple_choice(tasks / (std::string(name) + ".jsonl"), 4),
                                         8, testing::test_device()).acc;
  CATCH_CHECK(sweep.at("dense").at("quality").get<double>() == Approx(50.0 * acc).margin(1e-9));
  const double pruned = sweep.at("points").at(0).at("quality").get<double>();
  CATCH_CHECK((pruned >= 0.0 && pruned <= 100.0));
}

CATCH_TEST_CASE("prune --task scores the dense and the pruned model, and refuses an encoder before training",
                "[zero_shot][cli][e2e]") {
  testing::Workspace w("prune-task");
  const auto model = testing::fixture_path("llama3").string();
  const auto tasks = testing::fixture_path("zero_shot/tasks");
  const auto out = w.dir / "pruned";
  const std::vector<std::string> task_flags = {"--task", "piqa,hellaswag", "--task-dir", tasks.string(),
                                               "--task-limit", "4"};
  auto args = std::vector<std::string>{"prune", model, "--data", w.corpus.string(), "--target-sparsity", "0.5",
                                       "--steps", "4", "--batch-size", "4", "--max-length", "16", "--no-bench", "-o",
                                       out.string()};
  args.insert(args.end(), task_flags.begin(), task_flags.end());
  CATCH_REQUIRE(testing::run_cli(args) == 0);
  const auto quality = models::read_json_file(out / "headprune" / "summary.json").at("quality");
  CATCH_CHECK(quality.at("measure") == "zero_shot_acc");
  // Both numbers are the mean acc in percent of the same questions, scored by eval's scorer.
  for (const auto& [which, path] : {std::pair{"dense", model}, std::pair{"pruned", out.string()}}) {
    auto ckpt = models::load_checkpoint(path, testing::test_device());
    double acc = 0;
    for (const auto* name : {"piqa", "hellaswag"})
      acc += pruner::score_multiple_choice(ckpt, pruner::read_multiple_choice(tasks / (std::string(name) + ".jsonl"), 4),
                                           8, testing::test_device()).acc;
    CATCH_INFO(which);
    CATCH_CHECK(quality.at(which).get<double>() == Approx(50.0 * acc).margin(1e-9));
  }
  // An encoder cannot score the tasks: refused before any training, nothing written.
  auto encoder = args;
  encoder[1] = testing::fixture_path("distilbert").string();
  encoder[encoder.size() - task_flags.size() - 1] = (w.dir / "enc").string();
  CATCH_CHECK(testing::run_cli(encoder) == 1);
  CATCH_CHECK_FALSE(std::filesystem::exists(w.dir / "enc"));
  const pruner::QualityMeasure measure(std::nullopt, {pruner::read_multiple_choice(tasks / "piqa.jsonl", 4)});
  auto distilbert = models::load_checkpoint(testing::fixture_path("distilbert"), testing::test_device());
  CATCH_CHECK_THROWS_WITH(measure.check(distilbert), Catch::Contains("needs a causal language model"));
  auto limit_alone = std::vector<std::string>(args.begin(), args.end() - static_cast<std::ptrdiff_t>(task_flags.size()));
  limit_alone.back() = (w.dir / "lim").string();
  limit_alone.insert(limit_alone.end(), {"--task-limit", "4"});
  CATCH_CHECK(testing::run_cli(limit_alone) == 2);
}
