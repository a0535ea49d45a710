// --sts, --task, --task-limit and --task-dir: what `prune` and `sweep` score a model by
// (pruner/jobs/quality_measure.h).
#pragma once

#include <cstddef>
#include <string>

#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/jobs/quality_measure.h"

namespace headprune::cli {

struct QualityFlags {
  std::string sts;
  std::string task_list;
  std::string task_dir;
  std::size_t task_limit = 0;
};

/// Declares the four flags in group "Quality"; `what` says which models are scored.
void add_quality_flags(CommandLine& line, QualityFlags& flags, const char* what);

/// The measure from parsed flags: the STS file or the tasks are read here, so a bad one is
/// refused before anything trains. @throws headprune::UsageError for both given (QualityMeasure's
/// check), or --task-limit without --task; headprune::Error for an unreadable file or an unknown
/// task (named).
pruner::QualityMeasure quality_measure(const QualityFlags& flags, const po::variables_map& vm);

}  // namespace headprune::cli
