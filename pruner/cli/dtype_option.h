// `--dtype float32|bfloat16` of bench, eval and embed: the precision a model runs in.
#pragma once

#include <string>

#include <boost/program_options.hpp>
#include <torch/types.h>

#include "models/checkpoint.h"

namespace headprune::cli {

/// The option's value; float32 unless given.
struct DtypeOption {
  std::string name = "float32";

  /// Adds `--dtype TYPE` to `options`.
  void add_to(boost::program_options::options_description& options);
  /// float32 (also fp32) or bfloat16 (also bf16). @throws headprune::UsageError otherwise.
  torch::ScalarType scalar_type() const;
  /// Casts `checkpoint`'s model (and classifier head) to the chosen dtype
  /// (models::cast_checkpoint); nothing for float32. @throws headprune::UsageError as above.
  void apply(models::Checkpoint& checkpoint) const;
};

}  // namespace headprune::cli
