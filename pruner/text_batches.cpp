#include "pruner/text_batches.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/inputs.h"

namespace headprune::pruner {

torch::Tensor run_texts(models::Checkpoint& ckpt, const std::vector<std::string>& texts,
                        std::size_t batch_size, const torch::Device& device, int64_t width,
                        const BatchHead& head) {
  if (!ckpt.tokenizer) throw Error(fmt::format("{} has no tokenizer (vocab.txt or tokenizer.bin)", ckpt.dir.string()));
  std::vector<std::vector<int64_t>> ids;
  for (const auto& t : texts) ids.push_back(ckpt.tokenizer->encode(t, static_cast<std::size_t>(ckpt.max_seq_length)));
  std::vector<std::size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return ids[a].size() < ids[b].size(); });
  auto out = torch::zeros({static_cast<int64_t>(texts.size()), width});
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < order.size(); i += batch_size) {
    std::vector<std::size_t> chunk(order.begin() + static_cast<std::ptrdiff_t>(i),
                                   order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + batch_size)));
    const std::size_t seq = ids[chunk.back()].size();
    models::EncodedBatch b;
    b.batch = chunk.size();
    b.seq = seq;
    for (auto k : chunk) {
      for (std::size_t t = 0; t < seq; ++t) {
        const bool real = t < ids[k].size();
        b.input_ids.push_back(real ? ids[k][t] : ckpt.tokenizer->pad_id());
        b.attention_mask.push_back(real ? 1 : 0);
        b.token_type_ids.push_back(0);
      }
    }
    auto in = models::to_model_inputs(b, device);
    auto rows = head(in, ckpt.model->forward(in, nullptr).last_hidden_state).cpu();
    for (std::size_t r = 0; r < chunk.size(); ++r) out[static_cast<int64_t>(chunk[r])] = rows[static_cast<int64_t>(r)];
  }
  return out;
}

}  // namespace headprune::pruner
