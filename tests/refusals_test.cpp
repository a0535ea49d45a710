// Inputs read exactly or refused by name, round 3 (issue 51): task heads the tool does not model,
// weights holding NaN or Inf, a tokenizer.json of a model type the family does not use. Each case
// makes its file from a committed fixture, runs the command a user would, and checks the exit
// code, the one line the loader throws, and that nothing was written; and the one line an
// exception escaping a thread becomes.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/checkpoint.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "tests/cli_support.h"
#include "tests/test_support.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

/// A copy of the fixture `name` in a fresh folder, with `edit` applied to its config.json.
fs::path edited_fixture(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  const auto dir = testing::temp_dir("refusal") / name;
  fs::copy(testing::fixture_path(name), dir, fs::copy_options::recursive);
  nlohmann::json config;
  std::ifstream(dir / "config.json") >> config;
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir;
}

/// Sets config.json's architectures to {`name`}.
std::function<void(nlohmann::json&)> architecture(const std::string& name) {
  return [name](nlohmann::json& c) { c["architectures"] = {name}; };
}

/// Whether `dir` holds nothing but the files it was given (no output, no hidden work folder).
bool only(const fs::path& dir, std::size_t entries) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())) == entries;
}

}  // namespace

CATCH_TEST_CASE("token-classification and other task heads are refused by their architecture's name",
                "[edges][refusals]") {
  const auto cpu = torch::Device(torch::kCPU);
  // Their tensors are named as the sequence classifiers' are (BertForTokenClassification:
  // bert.* + classifier; ModernBertForTokenClassification: model.* + head + classifier), so
  // only config.json's architectures tells them apart.
  for (const auto& [fixture, task] : std::vector<std::pair<std::string, std::string>>{
           {"modernbert_classifier", "ModernBertForTokenClassification"},
           {"distilbert_classifier", "DistilBertForTokenClassification"},
           {"roberta_classifier", "RobertaForQuestionAnswering"},
           {"mpnet_classifier", "MPNetForMaskedLM"}}) {
    CATCH_INFO(task);
    const auto dir = edited_fixture(fixture, architecture(task));
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, cpu),
                            Catch::Contains("architectures [\"" + task + "\"] is not a class headprune models") &&
                                Catch::Contains("save it alone"));
    const auto entries = std::distance(fs::directory_iterator(dir.parent_path()), fs::directory_iterator());
    CATCH_CHECK(testing::run_cli({"inspect", dir.string()}) == 1);
    CATCH_CHECK(testing::run_cli({"apply", dir.string(), "--remove-heads", R"({"0": [0]})", "--out",
                                  (dir.parent_path() / "out").string()}) == 1);
    CATCH_CHECK(only(dir.parent_path(), static_cast<std::size_t>(entries)));
  }
  // A decoder saved with another head than its causal LM's.
  const auto qwen2 = edited_fixture("qwen2", architecture("Qwen2ForSequenceClassification"));
  CATCH_CHECK_THROWS_WITH(models::load_checkpoint(qwen2, cpu),
                          Catch::Contains("it reads Qwen2ForCausalLM checkpoints"));
  // The classes the tool does model still load, and headprune's remote-code class as transformers
  // saves a loaded export.
  CATCH_CHECK_NOTHROW(models::load_checkpoint(edited_fixture("qwen2", architecture("HeadpruneQwen2ForCausalLM")), cpu));
  CATCH_CHECK_NOTHROW(models::load_checkpoint(edited_fixture("distilbert_classifier", [](auto&) {}), cpu));
  CATCH_CHECK_NOTHROW(models::load_checkpoint(edited_fixture("distilbert", architecture("DistilBertForMaskedLM")), cpu));
}

CATCH_TEST_CASE("a weight holding NaN or Inf is refused at load, naming the tensor, nothing written",
                "[edges][refusals]") {
  const auto cpu = torch::Device(torch::kCPU);
  for (const double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    const auto dir = edited_fixture("qwen2", [](auto&) {});
    auto weights = models::load_safetensors(dir / "model.safetensors");
    const std::string name = "model.layers.1.self_attn.k_proj.weight";
    auto tensor = weights.at(name).clone();
    tensor.view({-1})[5] = bad;
    weights[name] = tensor;
    models::save_safetensors(dir / "model.safetensors", weights);
    CATCH_INFO(bad);
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, cpu),
                            Catch::Contains("weight '" + name + "' holds a non-finite value") &&
                                Catch::Contains("at element 5"));
    const auto parent = dir.parent_path();
    const auto corpus = testing::temp_dir("refusal-text") / "corpus.txt";
    std::ofstream(corpus) << "the cat sat on the mat.\nknowledge is power.\n";
    CATCH_CHECK(testing::run_cli({"generate", dir.string(), "--prompt", "hello", "--max-new-tokens", "2",
                                  "--temperature", "1"}) == 1);
    CATCH_CHECK(testing::run_cli({"train-gates", dir.string(), "--data", corpus.string(),
                                  "--target-sparsity", "0.5", "--steps", "2", "--out", (parent / "gates").string()}) == 1);
    CATCH_CHECK(only(parent, 1));  // no gates folder, no hidden work folder
  }
}

CATCH_TEST_CASE("a tokenizer.json of a model type the family does not use is refused with what it reads",
                "[edges][refusals]") {
  const auto cpu = torch::Device(torch::kCPU);
  for (const auto& type : {std::string("WordLevel"), std::string("WordPiece"), std::string()}) {
    const auto dir = edited_fixture("qwen2", [](auto&) {});
    nlohmann::json tokenizer;
    std::ifstream(dir / "tokenizer.json") >> tokenizer;
    if (type.empty()) tokenizer["model"].erase("type");
    else tokenizer["model"]["type"] = type;
    std::ofstream(dir / "tokenizer.json") << tokenizer.dump();
    CATCH_INFO(type);
    CATCH_CHECK_THROWS_WITH(models::load_checkpoint(dir, cpu),
                            Catch::Contains("model type '" + (type.empty() ? std::string("none") : type) +
                                            "' is not a tokenizer headprune reads for model_type 'qwen2'") &&
                                Catch::Contains("it reads tokenizer.json model BPE)"));
  }
  // An encoder's message names its own: WordPiece (or vocab.txt).
  const auto bert = edited_fixture("distilbert", [](auto&) {});
  nlohmann::json tokenizer;
  std::ifstream(bert / "tokenizer.json") >> tokenizer;
  tokenizer["model"]["type"] = "WordLevel";
  std::ofstream(bert / "tokenizer.json") << tokenizer.dump();
  CATCH_CHECK_THROWS_WITH(models::load_checkpoint(bert, cpu), Catch::Contains("model WordPiece, or vocab.txt"));
}

CATCH_TEST_CASE("an exception that escapes a thread ends the process with one line and exit code 1",
                "[edges][refusals]") {
  // What a rank that hit std::system_error in a thread of its own printed: the runtime's abort
  // message and a core dump. The handler main() installs turns it into one line.
  const auto log = testing::temp_dir("terminate") / "stderr.txt";
  const pid_t child = ::fork();
  if (child == 0) {
    if (std::freopen(log.c_str(), "w", stderr) == nullptr) std::_Exit(98);
    std::set_terminate(cli::report_uncaught_exception);
    std::thread([] { throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                             "thread creation"); }).join();
    std::_Exit(99);  // not reached
  }
  int status = 0;
  CATCH_REQUIRE(::waitpid(child, &status, 0) == child);
  CATCH_CHECK(WIFEXITED(status));
  CATCH_CHECK(WEXITSTATUS(status) == 1);
  const auto message = testing::read_text(log);
  CATCH_CHECK_THAT(message, Catch::StartsWith("headprune: error: thread creation: Resource temporarily unavailable"));
  CATCH_CHECK(std::count(message.begin(), message.end(), '\n') == 1);
}
