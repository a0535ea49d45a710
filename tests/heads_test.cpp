// `headprune heads`: a BERT whose heads are wired by hand to known behaviours is analysed and
// each head must get exactly its planted role; importance is zero exactly for a head that does
// nothing; CoNLL-U input as Universal Dependencies defines it, and bad input refused with
// file and line.
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/bert/bert_model.h"
#include "models/checkpoint.h"
#include "models/errors.h"
#include "models/formats/safetensors.h"
#include "models/loader.h"
#include "models/registry.h"
#include "pruner/analysis/conllu.h"
#include "pruner/analysis/head_analysis.h"
#include "pruner/analysis/head_importance.h"
#include "pruner/report/report.h"
#include "tests/cli_support.h"
#include "tests/stories_support.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"

using namespace headprune;
namespace fs = std::filesystem;

namespace {

// The planted model's vocabulary: its token ids are the indices here.
const std::vector<std::string> kVocab = {
    "[PAD]",  "[UNK]",   "[CLS]",   "[SEP]",  "[MASK]", "the",    "a",      "big",    "small",  "cat",
    "dog",    "sleeps",  "runs",    "today",  "outside", "again", "slowly", "loudly", "happily", "quickly",
    "quietly", "softly", "badly",   "early",  "late",   "often",  "never",  "always", "rarely", "sadly",
    "gladly", "boldly",  "calmly",  "deeply", "firmly", "gently", "kindly"};
constexpr int64_t kHidden = 64, kHeadDim = 16, kPositions = 16;
constexpr int64_t kVocabSize = 37;  // kVocab.size(): dims 0..36 of the embedding; positions follow
constexpr int64_t kClsId = 2, kFirstAdverb = 13;
constexpr double kScale = 6.5;  // planted scores c²/√head_dim ≈ 10.6: the target key gets > 0.999

/// Linear maps on the raw embedding (one-hot token + one-hot position), before LayerNorm.
struct RawProjection {
  torch::Tensor weight = torch::zeros({kHidden, kHidden}, torch::kDouble);
  torch::Tensor bias = torch::zeros({kHidden}, torch::kDouble);
  void set(int64_t row, std::initializer_list<int64_t> columns, double value) {
    for (auto c : columns) weight[row][c] = value;
  }
};

/// The four wired heads of the single layer (rows 16h..16h+15 of W_Q and W_K):
///   0 attends to the previous token (query: position i−1, key: position j),
///   1 attends to the adverb, each sentence's rarest token (verbs' queries are blank),
///   2 attends to [CLS],
///   3 attends from determiners and adjectives to the noun and from nouns and adverbs to the
///     verb: each word's governor in tests/fixtures/heads/planted.conllu.
std::pair<RawProjection, RawProjection> planted_projections() {
  RawProjection q, k;
  const double c = kScale;
  for (int64_t p = 0; p < kPositions; ++p) {
    k.set(p, {kVocabSize + p}, c);
    if (p > 0) q.set(p - 1, {kVocabSize + p}, c);
  }
  q.bias[16] = c;
  q.set(16, {11, 12}, -c);
  for (int64_t a = kFirstAdverb; a < kVocabSize; ++a) k.set(16, {a}, c);
  q.bias[32] = c;
  k.set(32, {kClsId}, c);
  q.set(48, {5, 6, 7, 8}, c);  // the, a, big, small -> noun
  q.set(49, {9, 10}, c);       // cat, dog -> verb
  for (int64_t a = kFirstAdverb; a < kVocabSize; ++a) q.set(49, {a}, c);
  k.set(48, {9, 10}, c);
  k.set(49, {11, 12}, c);
  return {q, k};
}

/// Copies a raw map into a Linear that reads LayerNorm(x) = (x − m)/s (γ = 1, β = 0), which is
/// the same affine map for every token here (each embedding has two ones): W = s·A, b = a + m·A·1.
void load_through_layer_norm(torch::OrderedDict<std::string, torch::Tensor>& params, const std::string& linear,
                             const RawProjection& raw) {
  const double m = 2.0 / kHidden, s = std::sqrt(2.0 / kHidden - m * m + 1e-12);
  params[linear + ".weight"].copy_(raw.weight * s);
  params[linear + ".bias"].copy_(raw.bias + m * raw.weight.sum(1));
}

/// Writes the planted model as an HF BERT folder (config.json, model.safetensors, vocab.txt).
fs::path write_planted_model() {
  const auto config = models::read_config({{"model_type", "bert"},
                                                      {"vocab_size", kVocabSize},
                                                      {"hidden_size", kHidden},
                                                      {"num_hidden_layers", 1},
                                                      {"num_attention_heads", kHidden / kHeadDim},
                                                      {"intermediate_size", 32},
                                                      {"max_position_embeddings", kPositions}},
                                                     "planted");
  models::BertModel model(config, false);
  {
    torch::NoGradGuard no_grad;
    auto params = model.named_parameters();
    params["embeddings.word_embeddings.weight"].copy_(torch::eye(kVocabSize, kHidden));
    params["embeddings.position_embeddings.weight"].copy_(
        torch::eye(kHidden).narrow(0, kVocabSize, kPositions));
    params["embeddings.token_type_embeddings.weight"].zero_();
    const auto [q, k] = planted_projections();
    load_through_layer_norm(params, "encoder.layer.0.attention.self.query", q);
    load_through_layer_norm(params, "encoder.layer.0.attention.self.key", k);
  }
  const auto dir = testing::temp_dir("planted") / "model";
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.to_json().dump(2);
  models::save_safetensors(dir / "model.safetensors", models::state_dict(model));
  std::ofstream vocab(dir / "vocab.txt");
  for (const auto& t : kVocab) vocab << t << "\n";
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": true, "model_max_length": 16})";
  return dir;
}

const fs::path& planted_model() {
  static const fs::path dir = write_planted_model();
  return dir;
}

fs::path planted_treebank() { return testing::fixture_path("heads/planted.conllu"); }

pruner::HeadAnalysis analyse_planted(std::size_t importance_sentences = 0) {
  auto ckpt = models::load_checkpoint(planted_model(), torch::kCPU);
  const auto input = pruner::sentences_from_conllu(*ckpt.tokenizer, pruner::read_conllu(planted_treebank()),
                                                   16, planted_treebank().string());
  pruner::AnalysisOptions options;
  options.batch_size = 8;
  options.importance_sentences = importance_sentences;
  return pruner::analyze_heads(ckpt, input, options, std::nullopt);
}

bool has_role(const std::vector<std::string>& roles, const std::string& role) {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

/// Heads (of layer 0) with any role of this family ("positional", "syntactic", ...).
std::set<size_t> heads_with_family(const pruner::HeadAnalysis& a, const std::string& family) {
  std::set<size_t> out;
  for (size_t h = 0; h < a.roles[0].size(); ++h)
    for (const auto& role : a.roles[0][h])
      if (role.substr(0, role.find(':')) == family) out.insert(h);
  return out;
}

}  // namespace

CATCH_TEST_CASE("planted heads: previous token, rarest token, [CLS] and governor are each found, once",
                "[heads]") {
  const auto a = analyse_planted();
  CATCH_REQUIRE(a.sentences == 120);
  const auto& st = a.stats->heads()[0];
  CATCH_CHECK(st[0].best_offset().first == -1);
  CATCH_CHECK(st[0].best_offset().second >= 0.95);
  CATCH_CHECK(has_role(a.roles[0][0], "positional:-1"));
  CATCH_CHECK(st[1].rare_share() >= 0.95);
  CATCH_CHECK(st[1].rare_sentences == 120);
  CATCH_CHECK(has_role(a.roles[0][1], "rare-token"));
  CATCH_CHECK(st[2].mean(st[2].first_mass) >= 0.95);
  CATCH_CHECK(has_role(a.roles[0][2], "sink"));
  for (const std::string relation : {"det", "nsubj", "advmod"}) {
    CATCH_CHECK(st[3].to_governor.at(relation).accuracy() >= 0.95);
    CATCH_CHECK(has_role(a.roles[0][3], "syntactic:" + relation + ">gov"));
  }
  CATCH_CHECK(heads_with_family(a, "positional") == std::set<size_t>{0});
  CATCH_CHECK(heads_with_family(a, "rare-token") == std::set<size_t>{1});
  CATCH_CHECK(heads_with_family(a, "sink") == std::set<size_t>{2});
  CATCH_CHECK(heads_with_family(a, "syntactic") == std::set<size_t>{3});
  CATCH_CHECK(pruner::primary_role(a.roles[0][3]) == "syntactic");
}

CATCH_TEST_CASE("planted heads: the fixed-offset baselines are what the treebank says", "[heads]") {
  // det: the governor is 1 word on (no adjective, 40 sentences) or 2 (80); nsubj and advmod
  // split 60/60 between two offsets: no fixed offset reaches the planted head's accuracy.
  const auto a = analyse_planted();
  const auto& up = a.stats->baselines(true);
  CATCH_CHECK(up.at("det").offset == 2);
  CATCH_CHECK(up.at("det").score.accuracy() == Approx(16.0 / 24.0));
  CATCH_CHECK(up.at("nsubj").score.accuracy() == Approx(0.5));
  CATCH_CHECK(up.at("advmod").score.accuracy() == Approx(0.5));
}

CATCH_TEST_CASE("importance is the loss with one head removed: zero exactly for a head that adds nothing",
                "[heads]") {
  auto ckpt = testing::tiny_checkpoint(2, 4);
  {
    torch::NoGradGuard no_grad;
    // Head 1 of layer 0 writes nothing: its 8 columns of the output projection are zero.
    auto params = ckpt.model->named_parameters();
    params["encoder.layer.0.attention.output.dense.weight"].narrow(1, 8, 8).zero_();
  }
  const auto sequences = testing::random_sequences(12, 4, 12, 3);
  const auto dir = testing::temp_dir("importance");
  testing::write_tiny_folder(ckpt, dir);
  const auto loaded = models::load_checkpoint(dir, torch::kCPU);
  const auto importance = pruner::ablation_importance(loaded, sequences, 5, torch::kCPU);
  CATCH_REQUIRE(importance.size() == 2);
  // The output is the dense one bit for bit; only 1 − cos(e, e) may round to a few float32 ulps.
  CATCH_CHECK(importance[0][1] < 1e-6);
  for (size_t l = 0; l < 2; ++l)
    for (size_t h = 0; h < 4; ++h)
      if (!(l == 0 && h == 1)) CATCH_CHECK(importance[l][h] > 1e-4);
  CATCH_CHECK_THROWS_WITH(pruner::ablation_importance(loaded, {}, 5, torch::kCPU),
                          Catch::Contains("no sentences"));
}

CATCH_TEST_CASE("CoNLL-U: multiword tokens and empty nodes are skipped as the format defines", "[heads][conllu]") {
  const std::string text =
      "# text = I don't know.\n"
      "1\tI\tI\tPRON\t_\t_\t3\tnsubj\t_\t_\n"
      "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "2\tdo\tdo\tAUX\t_\t_\t4\taux\t_\t_\n"
      "3\tn't\tnot\tPART\t_\t_\t4\tadvmod\t_\t_\n"
      "3.1\tknow\tknow\tVERB\t_\t_\t_\t_\t4:conj\t_\n"
      "4\tknow\tknow\tVERB\t_\t_\t0\troot\t_\t_\r\n"
      "5\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_\n"
      "\n"
      "1\tYes\tyes\tINTJ\t_\t_\t0\troot\t_\t_\n"
      "2\tindeed\tindeed\tADV\t_\t_\t1\tadvmod:emph\t_\t_";  // no final blank line
  const auto s = pruner::parse_conllu(text, "t.conllu");
  CATCH_REQUIRE(s.size() == 2);
  CATCH_REQUIRE(s[0].words.size() == 5);
  CATCH_CHECK(s[0].words[1].form == "do");
  CATCH_CHECK(s[0].words[0].head == 3);
  CATCH_CHECK(s[0].words[3].relation == "root");
  CATCH_CHECK(s[0].line == 2);
  CATCH_CHECK(s[1].words[1].relation == "advmod");
  CATCH_CHECK(s[1].line == 10);
}

CATCH_TEST_CASE("CoNLL-U: malformed lines are refused with file and line", "[heads][conllu][errors]") {
  const auto word = [](const std::string& id, const std::string& head) {
    return id + "\tw\tw\tX\t_\t_\t" + head + "\tdep\t_\t_\n";
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {word("1", "0") + "2\tw\tw\tX\n", "t.conllu:2: a word line has 10 tab-separated fields, this one 4"},
      {word("1", "0") + word("3", "1"), "t.conllu:2: ID '3': expected word 2"},
      {word("2", "0"), "t.conllu:1: ID '2': expected word 1"},
      {word("1", "x"), "t.conllu:1: HEAD 'x' is not a word index"},
      {word("1", "0") + word("2", "7") + "\n", "t.conllu:2: HEAD 7 is beyond the sentence's 2 words"},
      {word("1", "1"), "t.conllu:1: HEAD 1 is the word itself"},
      {word("1-x", "_"), "t.conllu:1: ID '1-x' is neither a word index"},
      {"1\t\tw\tX\t_\t_\t0\troot\t_\t_\n", "t.conllu:1: FORM is empty"},
  };
  for (const auto& [text, message] : bad) {
    CATCH_INFO(text);
    CATCH_CHECK_THROWS_WITH(pruner::parse_conllu(text, "t.conllu"), Catch::Contains(message));
  }
}

CATCH_TEST_CASE("CoNLL-U: sentences longer than the model's limit are left out and the first is named",
                "[heads][conllu]") {
  auto ckpt = models::load_checkpoint(planted_model(), torch::kCPU);
  std::string text = "1\tthe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_\n\n";
  for (int i = 1; i <= 15; ++i)  // 15 words + [CLS] + [SEP] = 17 tokens > 16
    text += std::to_string(i) + "\tcat\tcat\tNOUN\t_\t_\t" + (i == 1 ? "0\troot" : "1\tconj") + "\t_\t_\n";
  const auto input = pruner::sentences_from_conllu(*ckpt.tokenizer, pruner::parse_conllu(text, "long.conllu"),
                                                   16, "long.conllu");
  CATCH_CHECK(input.sentences.size() == 1);
  CATCH_CHECK(input.too_long == 1);
  CATCH_CHECK(input.first_too_long == "long.conllu:4");
}

CATCH_TEST_CASE("CoNLL-U: the real UD English EWT dev file reads completely", "[heads][conllu][data]") {
  const auto file = testing::shared_data_dir() / "ud_english_ewt" / "en_ewt-ud-dev.conllu";
  const auto sentences = pruner::read_conllu(file);
  CATCH_CHECK(sentences.size() == 2001);
  // Every line whose ID is a plain number is one syntactic word; ranges and decimals are not.
  std::ifstream in(file);
  int64_t word_lines = 0;
  const std::regex plain_id("^[0-9]+\t.*");
  for (std::string line; std::getline(in, line);) word_lines += std::regex_match(line, plain_id);
  int64_t words = 0;
  for (const auto& s : sentences) words += static_cast<int64_t>(s.words.size());
  CATCH_CHECK(words == word_lines);
}

CATCH_TEST_CASE("heads on the command line: roles as JSON, usage errors exit 2", "[heads][cli]") {
  const auto out = testing::temp_dir("heads-cli") / "heads.json";
  const auto svg = out.parent_path() / "roles.svg";
  CATCH_REQUIRE(testing::run_cli({"heads", planted_model().string(), "--conllu", planted_treebank().string(),
                                  "--importance-sentences", "8", "--out", out.string(), "--svg", svg.string()}) == 0);
  const auto picture = testing::read_text(svg);  // role names with < and > are escaped in the SVG
  CATCH_CHECK(picture.find("syntactic:det&gt;gov") != std::string::npos);
  CATCH_CHECK(picture.find("det>gov") == std::string::npos);
  const auto json = nlohmann::json::parse(testing::read_text(out));
  CATCH_CHECK(json["sentences"] == 120);
  CATCH_CHECK(json["heads"].size() == 4);
  CATCH_CHECK(json["heads"][1]["primary_role"] == "rare-token");
  CATCH_CHECK(json["roles"]["syntactic"]["all"] == 1);
  CATCH_CHECK(json["heads"][0].contains("importance"));
  CATCH_CHECK(testing::run_cli({"heads", planted_model().string()}) == 2);
  CATCH_CHECK(testing::run_cli({"heads", planted_model().string(), "--conllu", "/nonexistent.conllu"}) == 1);
  CATCH_CHECK(testing::run_cli({"heads", planted_model().string(), "--conllu", planted_treebank().string(),
                                "--gates", out.parent_path().string()}) == 1);  // no gates there
}

CATCH_TEST_CASE("prune --analyze-conllu stores the roles, and report shows them for kept and removed heads",
                "[heads][cli]") {
  const auto dir = testing::temp_dir("prune-analyze");
  const auto text = dir / "planted.txt";
  {
    std::ofstream out(text);
    std::ifstream in(planted_treebank());
    for (std::string line; std::getline(in, line);)
      if (line.rfind("# text = ", 0) == 0) out << line.substr(9) << "\n";
  }
  const std::vector<std::string> prune = {"prune", planted_model().string(), "--data", text.string(),
                                          "--target-sparsity", "0.5", "--steps", "16", "--batch-size", "8",
                                          "--max-length", "16", "--no-bench"};
  // A malformed treebank is refused before any training, and nothing is written.
  const auto bad = dir / "bad.conllu";
  std::ofstream(bad) << "1\tw\tw\tX\t_\t_\t0\troot\t_\t_\n3\tw\tw\tX\t_\t_\t1\tdep\t_\t_\n";
  auto args = prune;
  for (const auto& a : {std::string("--analyze-conllu"), bad.string(), std::string("--out"), (dir / "x").string()})
    args.push_back(a);
  CATCH_CHECK(testing::run_cli(args) == 1);
  CATCH_CHECK(!fs::exists(dir / "x"));

  const auto out = dir / "pruned";
  args = prune;
  for (const auto& a : {std::string("--analyze-conllu"), planted_treebank().string(), std::string("--out"), out.string()})
    args.push_back(a);
  CATCH_REQUIRE(testing::run_cli(args) == 0);
  for (const auto* f : {"head_roles.json", "head_roles.txt", "head_roles.svg"})
    CATCH_CHECK(fs::exists(out / "headprune" / f));
  const auto roles = nlohmann::json::parse(testing::read_text(out / "headprune" / "head_roles.json"));
  CATCH_CHECK(roles["sentences"] == 12 + 120);  // the held-out text (10%) and the treebank
  CATCH_CHECK(roles["roles"]["positional"]["all"] == 1);
  const auto report = pruner::report_from_checkpoint(out);
  CATCH_REQUIRE(report.layers[0].roles.size() == 4);
  CATCH_CHECK(report.layers[0].roles[0].front() == "positional:-1");
  CATCH_CHECK(report.layers[0].roles[2] == std::vector<std::string>{"sink"});
  const auto text_report = pruner::to_text(report);
  CATCH_CHECK(text_report.find("roles of the heads") != std::string::npos);
  CATCH_CHECK(text_report.find("heads per role, kept / removed:") != std::string::npos);
  // heads --gates takes the prune output itself and finds its gates: the stored analysis again.
  const auto again = dir / "again.json";
  CATCH_REQUIRE(testing::run_cli({"heads", planted_model().string(), "--conllu", planted_treebank().string(),
                                  "--gates", out.string(), "--importance-sentences", "0", "--out",
                                  again.string()}) == 0);
  CATCH_CHECK(nlohmann::json::parse(testing::read_text(again))["roles"]["rare-token"] ==
              roles["roles"]["rare-token"]);

  // The pruned checkpoint itself: its two heads keep their original ids, the others are drawn absent.
  const auto json_file = dir / "pruned-heads.json", svg = dir / "pruned-heads.svg";
  CATCH_REQUIRE(testing::run_cli({"heads", out.string(), "--conllu", planted_treebank().string(), "--out",
                                  json_file.string(), "--svg", svg.string()}) == 0);
  const auto pruned = nlohmann::json::parse(testing::read_text(json_file));
  CATCH_REQUIRE(pruned["heads"].size() == 2);
  const auto kept = report.layers[0].kept_indices();
  CATCH_CHECK(pruned["heads"][0]["head"] == kept[0]);
  CATCH_CHECK(pruned["heads"][1]["head"] == kept[1]);
  const auto picture = testing::read_text(svg);
  CATCH_CHECK(picture.find("removed earlier") != std::string::npos);
}

CATCH_TEST_CASE("heads on a LLaMA (stories260K): a causal head never attends ahead, and importance and rank per query head",
                "[heads][llama][data]") {
  auto ckpt = models::load_checkpoint(testing::converted_stories(), torch::kCPU);
  const std::vector<std::string> lines = {
      "Once upon a time, there was a little girl named Lily.", "She liked to play in the park with her dog.",
      "One day, the sun was hot and the birds sang.", "Tom said, \"Let's go home now!\"", "They were happy."};
  const auto input = pruner::sentences_from_text(*ckpt.tokenizer, std::vector<std::string>(lines), 256);
  CATCH_REQUIRE(input.sentences.front().special.front());  // BOS
  pruner::AnalysisOptions options;
  options.importance_sentences = 5;
  const auto a = pruner::analyze_heads(ckpt, input, options, std::nullopt);
  CATCH_REQUIRE(a.roles.size() == 5);
  for (const auto& layer : a.stats->heads())
    for (const auto& head : layer)
      for (int64_t o = 1; o <= pruner::kMaxTrackedOffset; ++o)
        CATCH_CHECK(head.offset_hits[static_cast<size_t>(o + pruner::kMaxTrackedOffset)] == 0);
  CATCH_CHECK(a.importance.size() == 5);
  CATCH_CHECK(a.importance[0].size() == 8);
  CATCH_CHECK(a.effective_rank[0][0] > 0.0);
  CATCH_CHECK(a.effective_rank[0][0] <= 8.0);  // head_dim 8 bounds the rank
}
