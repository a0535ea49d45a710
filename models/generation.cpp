#include "models/generation.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::models {

std::vector<int64_t> generate_tokens(AttentionModel& model, const std::vector<int64_t>& prompt,
                                     const GenerationOptions& options) {
  const int64_t max_len = model.config().max_position_embeddings;
  if (prompt.empty()) throw Error("generation needs at least one prompt token (BOS)");
  if (static_cast<int64_t>(prompt.size()) > max_len)
    throw Error(fmt::format("the prompt has {} tokens, more than the model's "
                            "max_position_embeddings {}",
                            prompt.size(), max_len));
  if (options.temperature < 0)
    throw Error(fmt::format("temperature must be >= 0, got {}", options.temperature));
  torch::NoGradGuard no_grad;
  const auto device = model.parameters().front().device();
  auto as_input = [&](const std::vector<int64_t>& t) { return torch::tensor(t, torch::kLong).unsqueeze(0).to(device); };
  std::vector<int64_t> ids = prompt;
  KvCache cache;
  auto pending = as_input(prompt);  // with the cache: the tokens not yet run
  for (int64_t step = 0; step < options.steps && static_cast<int64_t>(ids.size()) < max_len; ++step) {
    auto logits = options.use_cache ? model.forward_cached(pending, cache)
                                    : model.forward({as_input(ids), {}, {}}, nullptr).logits;
    if (!logits.defined())
      throw Error(fmt::format("a '{}' model has no language-model head to generate with",
                              model.config().model_type));
    auto last = logits[0][-1].to(torch::kCPU, torch::kFloat);
    int64_t next = 0;
    if (options.temperature == 0) {
      next = last.argmax().item<int64_t>();
    } else {
      auto probs = torch::softmax(last / options.temperature, -1);
      next = torch::multinomial(probs, 1).item<int64_t>();
    }
    if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), next) !=
        options.stop_tokens.end())
      break;
    ids.push_back(next);
    pending = as_input({next});
  }
  return ids;
}

}  // namespace headprune::models
