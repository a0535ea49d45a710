#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "models/config.h"
#include "models/errors.h"
#include "pruner/atomic_write.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/jobs/sweep.h"
#include "pruner/report/report.h"

namespace headprune::cli {

namespace {

/// A sweep folder's table, JSON and plot (from its sweep.json).
void report_sweep(const std::filesystem::path& file, bool as_json, const std::string& svg) {
  const auto sweep = models::read_json_file(file);
  if (!sweep.contains("points") || !sweep.contains("dense"))
    throw Error(fmt::format("{} is not a headprune sweep.json (no 'points' / 'dense')", file.string()));
  std::cout << (as_json ? sweep.dump(2) + "\n" : pruner::sweep_table(sweep));
  if (!svg.empty()) pruner::write_file_atomic(svg, pruner::sweep_svg(sweep));
}

}  // namespace

int run_report(const std::vector<std::string>& args, const GlobalOptions&) {
  CommandLine line("report", "report GATES_DIR|CHECKPOINT|SWEEP_DIR [--json] [--svg FILE]");
  std::string source, svg;
  line.positional("source", "GATES_DIR|CHECKPOINT|SWEEP_DIR", &source,
                  "gates folder (train-gates --out), pruned checkpoint folder, or sweep folder "
                  "(sweep --out: its table and quality-vs-speed plot)");
  line.group(group::kOutput).add_options()
      ("json", "print JSON instead of the table")
      ("svg", arg(&svg, "FILE"), "also write the heat-map picture to this SVG file");
  line.example("report out/minilm-50", "which heads survived, layer by layer")
      .example("report out/gates --svg heads.svg", "the same for a gates folder, with the picture")
      .example("report out/sweep --svg sweep.svg", "a sweep's table, and its plot drawn again");
  po::variables_map vm;
  if (!line.parse(args, vm)) return 0;
  if (std::filesystem::is_regular_file(std::filesystem::path(source) / "sweep.json")) {
    report_sweep(std::filesystem::path(source) / "sweep.json", vm.count("json") > 0, svg);
    return 0;
  }
  auto report = pruner::load_report(source);
  if (vm.count("json"))
    std::cout << pruner::to_json(report).dump(2) << "\n";
  else
    std::cout << pruner::to_text(report);
  if (!svg.empty()) pruner::write_file_atomic(svg, pruner::to_svg(report));
  return 0;
}

}  // namespace headprune::cli
