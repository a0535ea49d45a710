// The command-line front end: global options and the subcommand table.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <torch/types.h>

namespace headprune::cli {

namespace po = boost::program_options;

/// Options every subcommand accepts (before or after the subcommand name).
struct GlobalOptions {
  int threads = 0;          ///< 0 = OMP_NUM_THREADS if set, else every usable CPU (app.cpp)
  uint64_t seed = 42;
  std::string device = "cpu";
  std::string log_level = "info";

  /// The torch device. @throws headprune::UsageError for an unknown name or CUDA when this
  /// LibTorch build has none.
  torch::Device torch_device() const;
};

/// One subcommand: its name, a one-line summary, and its entry point, which receives the
/// arguments after the name and returns the exit code.
struct Command {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>&, const GlobalOptions&)> run;
};

/// Splits "a,b,c" at the commas ("" gives one empty item).
std::vector<std::string> split_list(const std::string& text);
/// Parses "1,8,32" into numbers. @throws headprune::UsageError naming `flag` on a bad item.
std::vector<double> parse_number_list(const std::string& text, const std::string& flag);
/// Same, each item a positive integer.
std::vector<int64_t> parse_positive_list(const std::string& text, const std::string& flag);

/// Writes `json` to `out_file` (atomically) if it is not empty, then prints `json` (as_json)
/// or `text` to stdout. @throws headprune::Error if the file cannot be written.
void emit_result(const nlohmann::json& json, const std::string& text, const std::string& out_file,
                 bool as_json);

/// The global options bound to `g` (parsed by run(); shown in every command's help).
po::options_description global_options(GlobalOptions& g);

/// The subcommands, in the order `--help` lists them.
const std::vector<Command>& commands();

/// Entry point: parses global options, dispatches, and maps exceptions to exit codes
/// (0 ok, 1 error, 2 usage).
int run(int argc, const char* const* argv);

/// The first line of `message` (a LibTorch error's what() goes on with a C++ stack trace).
std::string first_line(const std::string& message);

/// The process's std::terminate handler (set in main): an exception that escaped a thread, a
/// noexcept function or a destructor becomes one line "headprune: error: WHAT ..." on stderr and
/// exit code 1, instead of the runtime's abort message and a core dump.
[[noreturn]] void report_uncaught_exception();

// Subcommand entry points (one file each under pruner/cli/).
int run_inspect(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_train_gates(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_launch(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_apply(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_embed(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_heads(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_bench(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_bench_training(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_prune(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_eval(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_sweep(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_report(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_generate(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_convert_llama2c(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_convert_gguf(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_export_onnx(const std::vector<std::string>& args, const GlobalOptions& globals);
int run_export_gguf(const std::vector<std::string>& args, const GlobalOptions& globals);

}  // namespace headprune::cli
