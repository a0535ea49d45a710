// The roles of a model's heads as a picture: an SVG grid of layers × heads coloured by role.
#pragma once

#include <cstdint>
#include <string>

#include "pruner/analysis/head_analysis.h"

namespace headprune::pruner {

/// Standalone SVG: one cell per original head (layer rows, `num_attention_heads` columns),
/// filled with the colour of its primary role; heads removed before this analysis (absent from
/// the checkpoint) hatched grey; heads the gates remove crossed out. Each cell's hover title
/// lists its roles, importance and gate. A legend names the colours.
std::string roles_svg(const HeadAnalysis& analysis, int64_t num_attention_heads);

}  // namespace headprune::pruner
