// The roles `prune --analyze` found, in the report of the checkpoint it wrote.
#pragma once

#include <filesystem>
#include <string>

#include "pruner/report/report.h"

namespace headprune::pruner {

/// Fills each layer's `roles` from a head_roles.json (HeadAnalysis::to_json) of the model
/// `report` describes: per entry its layer, original head id and role list.
/// @throws headprune::Error naming the file when it is not such a file or names a head
///         outside the report's layers × num_attention_heads.
void read_report_roles(HeadReport& report, const std::filesystem::path& file);

/// Per layer the kept and removed heads with their roles ("0 positional:-1"), then per primary
/// role how many heads were kept and removed; empty when the report has no roles.
std::string roles_text(const HeadReport& report);

}  // namespace headprune::pruner
