#include <iostream>

#include "pruner/surgery/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/report/report.h"

namespace headprune::cli {

int run_report(const std::vector<std::string>& args, const GlobalOptions&) {
  CommandLine line("report", "report GATES_DIR|CHECKPOINT [--json] [--svg FILE]");
  std::string source, svg;
  line.positional("source", "GATES_DIR|CHECKPOINT", &source,
                  "gates folder (train-gates --out) or pruned checkpoint folder");
  line.group(group::kOutput).add_options()
      ("json", "print JSON instead of the table")
      ("svg", arg(&svg, "FILE"), "also write the heat-map picture to this SVG file");
  line.example("report out/minilm-50", "which heads survived, layer by layer")
      .example("report out/gates --svg heads.svg", "the same for a gates folder, with the picture");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  auto report = pruner::load_report(source);
  if (vm.count("json"))
    std::cout << pruner::to_json(report).dump(2) << "\n";
  else
    std::cout << pruner::to_text(report);
  if (!svg.empty()) pruner::write_file_atomic(svg, pruner::to_svg(report));
  return 0;
}

}  // namespace headprune::cli
