#include "models/sentence_pooling.h"

#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/config.h"
#include "models/errors.h"

namespace headprune::models {

SentencePooling SentencePooling::from_directory(const std::filesystem::path& dir) {
  SentencePooling p;
  const auto modules_file = dir / "modules.json";
  if (!std::filesystem::exists(modules_file)) return p;
  p.from_sentence_transformers = true;
  const auto modules = read_json_file(modules_file);
  if (!modules.is_array())
    throw Error(fmt::format("{}: expected a list of modules", modules_file.string()));
  for (const auto& m : modules) {
    const auto type = m.value("type", std::string());
    const auto path = m.value("path", std::string());
    if (type.find("Pooling") != std::string::npos) {
      const auto cfg_file = dir / path / "config.json";
      const auto cfg = read_json_file(cfg_file);
      auto flag = [&](const char* key) { return cfg.value(key, false); };
      if (flag("pooling_mode_weightedmean_tokens") || flag("pooling_mode_lasttoken"))
        throw Error(fmt::format("{}: weighted-mean and last-token pooling are not supported",
                                cfg_file.string()));
      if (flag("pooling_mode_cls_token")) p.mode = Mode::kCls;
      else if (flag("pooling_mode_max_tokens")) p.mode = Mode::kMax;
      else if (flag("pooling_mode_mean_sqrt_len_tokens")) p.mode = Mode::kMeanSqrtLen;
      else p.mode = Mode::kMean;
    } else if (type.find("Normalize") != std::string::npos) {
      p.normalize = true;
    }
  }
  const auto st_config = dir / "sentence_bert_config.json";
  if (std::filesystem::exists(st_config)) {
    const auto cfg = read_json_file(st_config);
    if (cfg.contains("max_seq_length") && cfg["max_seq_length"].is_number_integer())
      p.max_seq_length = cfg["max_seq_length"].get<int64_t>();
  }
  return p;
}

torch::Tensor SentencePooling::embed(const torch::Tensor& hidden,
                                     const torch::Tensor& attention_mask) const {
  auto m = attention_mask.to(hidden.dtype()).unsqueeze(-1);  // [B, T, 1]
  torch::Tensor pooled;
  switch (mode) {
    case Mode::kCls:
      pooled = hidden.select(1, 0);
      break;
    case Mode::kMax:
      pooled = hidden.masked_fill(m == 0, -1e9).amax(1);
      break;
    case Mode::kMean:
    case Mode::kMeanSqrtLen: {
      auto counts = m.sum(1).clamp_min(1e-9);  // [B, 1]
      auto sum = (hidden * m).sum(1);
      pooled = mode == Mode::kMean ? sum / counts : sum / counts.sqrt();
      break;
    }
  }
  if (normalize)
    pooled = torch::nn::functional::normalize(
        pooled, torch::nn::functional::NormalizeFuncOptions().p(2).dim(1).eps(1e-12));
  return pooled;
}

std::string SentencePooling::describe() const {
  const char* names[] = {"mean", "cls", "max", "mean_sqrt_len"};
  return fmt::format("{}{}", names[static_cast<int>(mode)], normalize ? "+normalize" : "");
}

}  // namespace headprune::models
