// llama-greedy: greedy decoding with llama.cpp's public API (llama.h), printing token ids, so
// that tools/check_gguf_llama_cpp.py can compare llama.cpp with `headprune generate
// --temperature 0` token by token. Built by tools/build-llama-cpp against the libllama it builds.
//
// Usage: llama-greedy MODEL.gguf N_PREDICT PROMPT
// Prints one line "prompt: ids..." and one line "generated: ids..." (stopping after an
// end-of-generation token, which is printed), then the generated text on a third line.
// The prompt is tokenized as llama-simple does (add_special = true, parse_special = true).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf N_PREDICT PROMPT\n", argv[0]);
    return 2;
  }
  const int n_predict = std::atoi(argv[2]);
  const std::string prompt = argv[3];
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "llama-greedy: unable to load %s\n", argv[1]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_prompt = -llama_tokenize(vocab, prompt.c_str(), static_cast<int32_t>(prompt.size()), nullptr, 0, true, true);
  std::vector<llama_token> tokens(static_cast<std::size_t>(n_prompt));
  if (llama_tokenize(vocab, prompt.c_str(), static_cast<int32_t>(prompt.size()), tokens.data(), n_prompt, true, true) < 0)
    return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_prompt + n_predict + 1);
  cp.n_batch = static_cast<uint32_t>(n_prompt);
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  llama_sampler* smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
  llama_sampler_chain_add(smpl, llama_sampler_init_greedy());
  std::printf("prompt:");
  for (auto t : tokens) std::printf(" %d", t);
  std::printf("\ngenerated:");
  std::string text;
  llama_batch batch = llama_batch_get_one(tokens.data(), n_prompt);
  llama_token next = 0;
  for (int i = 0; i < n_predict; ++i) {
    if (llama_decode(ctx, batch)) {
      std::fprintf(stderr, "llama-greedy: decode failed\n");
      return 1;
    }
    next = llama_sampler_sample(smpl, ctx, -1);
    std::printf(" %d", next);
    char buf[256];
    const int n = llama_token_to_piece(vocab, next, buf, sizeof(buf), 0, true);
    if (n > 0) text.append(buf, static_cast<std::size_t>(n));
    if (llama_vocab_is_eog(vocab, next)) break;
    batch = llama_batch_get_one(&next, 1);
  }
  std::printf("\n%s\n", text.c_str());
  llama_sampler_free(smpl);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
