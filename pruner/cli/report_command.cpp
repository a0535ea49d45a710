#include <iostream>

#include "pruner/surgery/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/report/report.h"

namespace headprune::cli {

int run_report(const std::vector<std::string>& args, const GlobalOptions&) {
  po::options_description desc("report options");
  std::string source, svg;
  desc.add_options()
      ("source", po::value<std::string>(&source)->required(),
       "gates folder (train-gates --out) or pruned checkpoint folder (positional)")
      ("json", "print JSON instead of the table")
      ("svg", po::value<std::string>(&svg), "also write the heat-map picture to this SVG file");
  po::variables_map vm;
  if (!parse_args(args, "headprune report GATES_DIR|CHECKPOINT [--json] [--svg FILE]", desc,
                  {"source"}, vm))
    return 0;
  auto report = pruner::load_report(source);
  if (vm.count("json"))
    std::cout << pruner::to_json(report).dump(2) << "\n";
  else
    std::cout << pruner::to_text(report);
  if (!svg.empty()) pruner::write_file_atomic(svg, pruner::to_svg(report));
  return 0;
}

}  // namespace headprune::cli
