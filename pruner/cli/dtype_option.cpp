#include "pruner/cli/dtype_option.h"

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/cli/command_line.h"
#include "pruner/log.h"

namespace headprune::cli {

void DtypeOption::add_to(boost::program_options::options_description& options) {
  options.add_options()("dtype", arg(&name, "TYPE", name),
                        "float32 or bfloat16: the precision the model runs in (bfloat16 pays on CPUs "
                        "with AVX-512-BF16 or AMX, and on GPUs; docs/results.md, \"bfloat16\")");
}

torch::ScalarType DtypeOption::scalar_type() const {
  if (name == "float32" || name == "fp32") return torch::kFloat;
  if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
  throw UsageError(fmt::format("--dtype: '{}' is not supported (use float32 or bfloat16)", name));
}

void DtypeOption::apply(models::Checkpoint& checkpoint) const {
  const auto dtype = scalar_type();
  if (dtype == torch::kFloat) return;
  models::cast_checkpoint(checkpoint, dtype);
  log::info("{}: running in {}", checkpoint.dir.string(), name);
}

}  // namespace headprune::cli
