// A tiny random BERT, in memory or written as a checkpoint folder, for fast tests of the
// pipeline (correctness against the reference is shown on the real model elsewhere).
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/bert/bert_model.h"
#include "models/checkpoint.h"
#include "models/config.h"
#include "models/formats/safetensors.h"
#include "models/registry.h"
#include "pruner/text/corpus.h"

namespace headprune::testing {

inline models::ModelConfig tiny_config(int64_t layers = 2, int64_t heads = 4, int64_t head_dim = 8) {
  return models::read_config({{"model_type", "bert"},
                                         {"vocab_size", 64},
                                         {"hidden_size", heads * head_dim},
                                         {"num_hidden_layers", layers},
                                         {"num_attention_heads", heads},
                                         {"intermediate_size", 2 * heads * head_dim},
                                         {"max_position_embeddings", 64}},
                                        "tiny");
}

/// A random tiny BERT with mean pooling (no tokenizer).
inline models::Checkpoint tiny_checkpoint(int64_t layers = 2, int64_t heads = 4, uint64_t seed = 7) {
  torch::manual_seed(seed);
  models::Checkpoint c;
  auto model = std::make_shared<models::BertModel>(tiny_config(layers, heads), false);
  {
    // Larger weights than BERT's init so that every head visibly matters.
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters())
      if (p.key().find("attention") != std::string::npos && p.key().find("weight") != std::string::npos &&
          p.key().find("LayerNorm") == std::string::npos)
        p.value().normal_(0, 0.25);
  }
  model->eval();
  c.model = model;
  c.max_seq_length = 64;
  return c;
}

/// Random token sequences with [CLS]=2 ... [SEP]=3 framing, lengths in [min_len, max_len].
inline std::vector<std::vector<int64_t>> random_sequences(std::size_t n, std::size_t min_len,
                                                          std::size_t max_len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> tok(5, 63);
  std::uniform_int_distribution<std::size_t> len(min_len, max_len);
  std::vector<std::vector<int64_t>> out;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<int64_t> s{2};
    for (std::size_t t = len(rng); t > 0; --t) s.push_back(tok(rng));
    s.push_back(3);
    out.push_back(s);
  }
  return out;
}

inline pruner::Corpus random_corpus(std::size_t train, std::size_t heldout, uint64_t seed) {
  pruner::Corpus c;
  c.train = random_sequences(train, 4, 20, seed);
  c.heldout = random_sequences(heldout, 4, 20, seed + 1);
  c.pad_id = 0;
  return c;
}

/// Writes the checkpoint's model as an HF folder (config.json, model.safetensors) with a small
/// WordPiece vocabulary (vocab.txt: special tokens, a-z, ##a-##z, padding to vocab_size).
inline void write_tiny_folder(const models::Checkpoint& c, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << c.model->config().to_json().dump(2);
  models::save_safetensors(dir / "model.safetensors", models::state_dict(*c.model));
  std::ofstream vocab(dir / "vocab.txt");
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char ch = 'a'; ch <= 'z'; ++ch) tokens.push_back(std::string(1, ch));
  for (char ch = 'a'; ch <= 'z'; ++ch) tokens.push_back("##" + std::string(1, ch));
  for (const char* p : {".", ",", "'", "!", "?", "the", "and", "of", "to", "a##"}) tokens.push_back(p);
  while (tokens.size() < 64) tokens.push_back("[unused" + std::to_string(tokens.size()) + "]");
  tokens.resize(64);
  for (const auto& t : tokens) vocab << t << "\n";
  std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": true, "model_max_length": 64})";
}

}  // namespace headprune::testing
