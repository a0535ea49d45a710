#include "pruner/measure/sts.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/input_file.h"
#include "pruner/measure/text_batches.h"

namespace headprune::pruner {
namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const auto tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return fields;
}

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

std::vector<StsPair> read_sts(const std::filesystem::path& file) {
  auto in = models::open_input_file(file, "STS file");
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
    StsPair p;
    try {
      std::size_t used = 0;
      p.score = std::stod(f[4], &used);
      if (used != f[4].size()) throw std::invalid_argument(f[4]);
    } catch (const std::exception&) {
      throw Error(fmt::format("{} line {}: score '{}' is not a number", file.string(), n, f[4]));
    }
    p.sentence1 = f[5];
    p.sentence2 = f[6];
    pairs.push_back(std::move(p));
  }
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
