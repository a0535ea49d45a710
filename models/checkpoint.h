// A loaded checkpoint (models/loader.h reads one), its weights set by name, and the name -> tensor
// map used to save one.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <torch/types.h>

#include "models/attention_model.h"
#include "models/formats/safetensors.h"
#include "models/sentence_pooling.h"
#include "models/sequence_classification.h"
#include "models/tokenizer/tokenizer.h"

namespace headprune::models {

/// Everything read from a checkpoint folder.
struct Checkpoint {
  std::filesystem::path dir;
  std::shared_ptr<AttentionModel> model;
  /// The folder's tokenizer: WordPiece (vocab.txt) for BERT, llama2.c (tokenizer.bin) for
  /// LLaMA, byte-level BPE (tokenizer.json with a BPE model) for GPT-2-style vocabularies;
  /// null when the folder has none.
  std::shared_ptr<Tokenizer> tokenizer;
  /// The chat template (Jinja text): tokenizer_config.json's `chat_template` or
  /// chat_template.jinja in a folder, `tokenizer.chat_template` in a GGUF file; "" if none.
  std::string chat_template;
  /// Files a single-file source implies for an HF folder, by name: a GGUF file's tokenizer as
  /// tokenizer.json and tokenizer_config.json (models/tokenizer/gguf_tokenizer.h). Export writes
  /// them beside the weights, as it copies a source folder's files.
  std::map<std::string, std::string> implied_files;
  SentencePooling pooling;
  /// Longest input the folder is meant for: sentence-transformers' max_seq_length if set;
  /// else, in a sentence-transformers folder, min(max_position_embeddings, the tokenizer's
  /// model_max_length) as sentence-transformers 3 and 6 compute it; else
  /// max_position_embeddings.
  int64_t max_seq_length = 0;
  /// The classifier of a `<Family>ForSequenceClassification` checkpoint (the family's
  /// ClassificationLayout: "classifier.weight", "classifier.out_proj.weight", ... in the file),
  /// else empty.
  SequenceClassificationHead classifier{nullptr};
  /// Weights in the file that the model does not use, outside any module it models (e.g. a
  /// BertForMaskedLM's `cls.predictions.*`): carried through export unchanged, with a warning.
  std::vector<std::string> unused_keys;
  /// Those tensors by their names in the file.
  TensorMap passthrough;
  /// Each weight's dtype in the file, by the model's parameter name: export writes every
  /// tensor back in its source dtype (F16/BF16 stay F16/BF16).
  std::map<std::string, torch::ScalarType> source_dtypes;
};

/// Rounds every parameter whose source dtype is narrower than float32 to that dtype and back,
/// so that the in-memory model equals what export writes (call after surgery has folded gates).
void round_to_source_dtypes(Checkpoint& checkpoint);

/// Runs `checkpoint`'s model and classifier head in `dtype` (e.g. bfloat16): every floating-point
/// parameter and buffer is cast, integer buffers (position ids) are left as they are, as
/// PyTorch's Module.to(dtype) does. Sentence pooling keeps float32 (SentencePooling::embed).
/// For inference only: export writes source_dtypes, not this dtype.
void cast_checkpoint(Checkpoint& checkpoint, torch::ScalarType dtype);

/// How load_checkpoint holds weights that the file stores narrower than float32 (BF16, F16).
enum class WeightStorage {
  /// Every weight widened to float32 on load: what inference and export commands use, and what
  /// trained weights need.
  float32,
  /// The model's narrow_storage_weights() (its matrices: projections, embeddings, LM head) kept
  /// in the file's dtype and widened per use, exactly (models/linear.h widened_linear); the rest
  /// float32. Half the weight memory of a bfloat16 checkpoint, for gate training, where these
  /// weights are frozen (issue 37). Forward results equal float32 storage's.
  source,
};

/// Widens every floating-point parameter narrower than float32 to float32 (in place, as
/// set_data: optimisers and references keep pointing at the same parameters). For weights
/// about to be trained after a WeightStorage::source load.
void widen_narrow_weights(torch::nn::Module& module);

/// Copies `weights` into the module's parameters and buffers by name (load_checkpoint takes a
/// `<Family>For*` file's encoder prefix off first). Buffers absent from the file keep their
/// values. A parameter takes a file tensor of its own dtype over as it is (shared, not copied:
/// the weights are never held twice), and so does one named in `keep_dtype` whose file tensor is
/// a narrower floating type, in the file's dtype; other dtypes are converted into it. A tensor
/// that is a view of a larger buffer is copied first. @returns the keys of `weights` (as named in the file) that the module has no slot for.
/// @throws headprune::Error naming the first missing parameter, mismatched shape, or tensor
///         holding a NaN or ±Inf (checked as each is set, a block of 2^20 elements at a time).
std::vector<std::string> load_weights(torch::nn::Module& module, const TensorMap& weights,
                                      const std::string& source, const std::set<std::string>& keep_dtype = {});

/// The module's parameters and buffers by name, on CPU, contiguous.
TensorMap state_dict(const torch::nn::Module& module);

/// What export writes for a checkpoint: state_dict(model) in the family's file layout
/// (AttentionModel::weights_to_file), or with a classifier head the family's
/// `*ForSequenceClassification` layout (ClassificationLayout: "bert." / "roberta." / ... + the
/// encoder's names, plus the head's), which transformers requires once a head's keys are present; plus the passthrough tensors;
/// each tensor in its source dtype. @throws headprune::Error if a passthrough name collides.
TensorMap checkpoint_state_dict(const Checkpoint& checkpoint);

}  // namespace headprune::models
