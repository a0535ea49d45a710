#include "pruner/text/text_batches.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/text/corpus.h"

namespace headprune::pruner {

torch::Tensor run_texts(models::Checkpoint& ckpt, const std::vector<std::string>& texts,
                        std::size_t batch_size, const torch::Device& device, int64_t width,
                        const BatchHead& head) {
  if (!ckpt.tokenizer)
    throw Error(fmt::format("{} has no tokenizer: running text through the model needs the model's tokenizer",
                            ckpt.dir.string()));
  std::vector<std::vector<int64_t>> ids;
  for (const auto& t : texts) ids.push_back(ckpt.tokenizer->encode(t, static_cast<std::size_t>(ckpt.max_seq_length)));
  auto out = torch::zeros({static_cast<int64_t>(texts.size()), width});
  torch::NoGradGuard no_grad;
  // The same length-bucketed batches and padding as training (pruner/text/corpus.h).
  for (const auto& chunk : length_buckets(ids, batch_size)) {
    auto in = make_inputs(ids, chunk, ckpt.tokenizer->pad_id(), device);
    auto rows = head(in, ckpt.model->forward(in, nullptr).last_hidden_state).cpu();
    for (std::size_t r = 0; r < chunk.size(); ++r) out[static_cast<int64_t>(chunk[r])] = rows[static_cast<int64_t>(r)];
  }
  return out;
}

}  // namespace headprune::pruner
