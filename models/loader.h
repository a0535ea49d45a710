// Loading a checkpoint (an HF folder: config.json + safetensors [+ tokenizer, sentence-transformers
// modules]; a llama2.c .bin or llama.cpp .gguf file) into a model, and copying a loaded one. The
// loader sits above the registry (docs/design.md, "Floors"): it is where a folder's model_type
// becomes a family's model.
#pragma once

#include <filesystem>
#include <string>

#include <torch/types.h>

#include "models/checkpoint.h"

namespace headprune::models {

/// Loads a checkpoint folder onto `device`, its weights held as `storage` says. The architecture comes from config.json's
/// `model_type` (bert: BertModel, llama: LlamaModel); head counts per layer from `pruned_heads`
/// (or, for llama, `headprune.kept_heads`). A llama2.c `.bin` file is accepted too and converted
/// in memory (models/formats/llama2c.h; `dir` is then that file, and no tokenizer is loaded), and so
/// is a llama.cpp `.gguf` file of an architecture a family maps (models/gguf_model.h; with its tokenizer).
/// @throws headprune::Error naming the folder, file, or tensor: missing config/weights, a weight
///         the model needs that the file lacks, or a shape that differs from the config's.
Checkpoint load_checkpoint(const std::filesystem::path& dir, const torch::Device& device,
                           WeightStorage storage = WeightStorage::float32);

/// Checks, before anything loads, that `dir` holds a tokenizer load_checkpoint reads
/// (vocab.txt, tokenizer.json with a WordPiece or byte-level BPE model, or llama2.c tokenizer.bin),
/// or that a .gguf file carries one.
/// @throws headprune::Error "DIR has no tokenizer ... COMMAND needs the model's tokenizer".
void require_tokenizer_files(const std::filesystem::path& dir, const std::string& command);

/// A second, independent model with the weights `source.model` holds now (its current heads and
/// its dtypes: narrow-stored matrices stay narrow), on the same device, in eval mode: what a job
/// needs when one model is changed and the other must not be (the dense teacher beside a student
/// whose weights train; the dense model beside the one surgery cuts). The rest of the checkpoint
/// (tokenizer, classifier head, pooling, passthrough tensors) is shared with `source`: nothing
/// changes those. Equal, tensor for tensor, to loading the folder again; no file is read.
/// @throws headprune::Error as load_weights does (never for a model that loaded).
Checkpoint copy_checkpoint(const Checkpoint& source);

}  // namespace headprune::models
