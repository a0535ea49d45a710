#include "pruner/measure/sts.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/input_file.h"
#include "pruner/measure/csv_table.h"
#include "pruner/text/text_batches.h"

namespace headprune::pruner {
namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = avg;
    i = j + 1;
  }
  return r;
}

}  // namespace

namespace {

/// A score field as a number. @throws Error naming the file and line.
double parse_score(const std::string& text, const std::filesystem::path& file, std::size_t line) {
  try {
    std::size_t used = 0;
    const double score = std::stod(text, &used);
    if (used == text.size()) return score;
  } catch (const std::exception&) {
  }
  throw Error(fmt::format("{} line {}: score '{}' is not a number", file.string(), line, text));
}

/// The STS Benchmark's own layout: tab-separated, 7 or 9 fields.
std::vector<StsPair> read_sts_tsv(std::istream& in, const std::filesystem::path& file) {
  std::vector<StsPair> pairs;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto f = split_tabs(line);
    if (f.size() != 7 && f.size() != 9)
      throw Error(fmt::format("{} line {}: {} tab-separated fields, expected 7 or 9 (STS "
                              "Benchmark: genre, file, years, id, score, sentence1, sentence2)",
                              file.string(), n, f.size()));
    pairs.push_back({parse_score(f[4], file, n), f[5], f[6]});
  }
  return pairs;
}

/// The column of `header` named one of `names`. @throws Error listing the header.
std::size_t column(const std::vector<std::string>& header, std::initializer_list<const char*> names,
                   const std::filesystem::path& file) {
  for (const char* name : names) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it != header.end()) return static_cast<std::size_t>(it - header.begin());
  }
  throw Error(fmt::format("{}: the CSV header has no column '{}' (header: {}; expected "
                          "sentence1,sentence2,score as in the Hugging Face STS-B exports)",
                          file.string(), *names.begin(), fmt::join(header, ",")));
}

/// The Hugging Face CSV layout: a header naming sentence1, sentence2 and score (or label).
std::vector<StsPair> read_sts_csv(const std::string& text, const std::filesystem::path& file) {
  const auto rows = parse_csv(text, file.string());
  if (rows.empty()) return {};
  const auto& header = rows.front();
  const auto s1 = column(header, {"sentence1"}, file), s2 = column(header, {"sentence2"}, file);
  const auto score = column(header, {"score", "label", "similarity_score"}, file);
  std::vector<StsPair> pairs;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != header.size())
      throw Error(fmt::format("{} record {}: {} fields, the header has {}", file.string(), i + 1,
                              rows[i].size(), header.size()));
    pairs.push_back({parse_score(rows[i][score], file, i + 1), rows[i][s1], rows[i][s2]});
  }
  return pairs;
}

}  // namespace

std::vector<StsPair> read_sts(const std::filesystem::path& file) {
  const auto text = models::read_input_file(file, "STS file");
  const auto start = std::min(text.find_first_not_of('\n'), text.size());
  const auto first = text.substr(start, text.find('\n', start) - start);  // first non-empty line
  const bool csv = first.find('\t') == std::string::npos && first.find("sentence1") != std::string::npos;
  std::istringstream lines(text);
  auto pairs = csv ? read_sts_csv(text, file) : read_sts_tsv(lines, file);
  if (pairs.empty()) throw Error(fmt::format("{} holds no STS pairs", file.string()));
  return pairs;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2)
    throw Error("spearman needs two samples of the same size, at least 2 values");
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double cov = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return cov / std::sqrt(va * vb);
}

torch::Tensor embed_texts(models::Checkpoint& ckpt, const std::vector<std::string>& texts,
                          std::size_t batch_size, const torch::Device& device) {
  return run_texts(ckpt, texts, batch_size, device,
                   ckpt.pooling.embedding_size(ckpt.model->config().hidden_size),
                   [&](const models::ModelInputs& in, const torch::Tensor& hidden) {
                     return ckpt.pooling.embed(hidden, in.attention_mask);
                   });
}

StsResult evaluate_sts(models::Checkpoint& ckpt, const std::vector<StsPair>& pairs,
                       std::size_t batch_size, const torch::Device& device) {
  std::vector<std::string> first, second;
  std::vector<double> gold;
  for (const auto& p : pairs) {
    first.push_back(p.sentence1);
    second.push_back(p.sentence2);
    gold.push_back(p.score);
  }
  auto a = embed_texts(ckpt, first, batch_size, device);
  auto b = embed_texts(ckpt, second, batch_size, device);
  auto cos = torch::cosine_similarity(a, b, 1).to(torch::kDouble).contiguous();
  std::vector<double> sims(cos.data_ptr<double>(), cos.data_ptr<double>() + cos.numel());
  return {pairs.size(), 100.0 * spearman(sims, gold)};
}

}  // namespace headprune::pruner
