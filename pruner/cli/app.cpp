#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/atomic_write.h"
#include "pruner/blas_kernels.h"
#include "pruner/cli/command.h"
#include "pruner/cli/command_line.h"
#include "pruner/cli/option_table.h"
#include "pruner/log.h"
#include "pruner/thread_pools.h"
#include "pruner/training/interruption.h"

namespace headprune::cli {

po::options_description global_options(GlobalOptions& g) {
  po::options_description desc("Global options (any position)");
  desc.add_options()
      ("threads", arg(&g.threads, "N", 0),
       "CPU threads for LibTorch and BLAS alike (0 = OMP_NUM_THREADS if set, else every CPU "
       "this process may use)")
      ("seed", arg(&g.seed, "N", uint64_t{42}), "random seed")
      ("device", arg(&g.device, "DEVICE", std::string("cpu")), "cpu or cuda[:N]")
      ("log-level", arg(&g.log_level, "LEVEL", std::string("info")), "error, warn, info or debug")
      ("quiet,q", "only warnings and errors on stderr (= --log-level warn)")
      ("version", "print the version and exit");
  return desc;
}

const po::options_description& global_options_help() {
  static GlobalOptions shown;
  static const po::options_description desc = [] {
    auto d = global_options(shown);
    d.add_options()("help,h", "show help (after a command: that command's help)");
    return d;
  }();
  return desc;
}

namespace {

void print_overview() {
  fmt::print(
      "headprune {} - find and remove unneeded attention heads of transformer checkpoints\n\n"
      "usage: headprune COMMAND [options]   (headprune help COMMAND, or COMMAND --help, for details)\n\n"
      "Commands:\n",
      HEADPRUNE_VERSION);
  for (const auto& c : commands()) fmt::print("  {:<15} {}\n", c.name, c.summary);
  fmt::print("  {:<15} {}\n", "help", "help COMMAND: that command's options and examples; help --markdown: "
             "the option table of docs/cli.md");
  std::cout << "\n" << global_options_help()
            << "\nExit codes: 0 ok, 1 error (a file, model or run failed), 2 usage (the command line "
               "is wrong), 130 / 143 training stopped by Ctrl-C / SIGTERM after saving a snapshot "
               "(continue with --resume).\n";
}

/// `--threads 0`: OMP_NUM_THREADS when set (as `headprune launch` sets it for each rank), else
/// every CPU this process may use. @throws UsageError if OMP_NUM_THREADS is not a count.
int default_threads() {
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (!omp || !*omp) return pruner::usable_cpus();
  try {
    std::size_t used = 0;
    const int n = std::stoi(omp, &used);
    if (used == std::string(omp).size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("OMP_NUM_THREADS='{}' is not a positive thread count; unset it or give --threads N", omp));
}

/// The command called `name`. @throws UsageError naming the nearest command.
const Command& find_command(const std::string& name) {
  const Command* nearest = nullptr;
  std::size_t best = 4;
  for (const auto& c : commands()) {
    if (c.name == name) return c;
    const auto d = edit_distance(name, c.name);
    if (d < best) best = d, nearest = &c;
  }
  throw UsageError(fmt::format("unknown command '{}'{} (run headprune --help for the list)", name,
                               nearest ? "; did you mean '" + nearest->name + "'?" : ""));
}

/// `headprune help [COMMAND | --markdown]`.
int run_help(const std::vector<std::string>& rest) {
  if (rest.empty()) {
    print_overview();
    return 0;
  }
  if (rest.front() == "--markdown") {
    std::cout << option_table_markdown(all_option_rows());
    return 0;
  }
  GlobalOptions g;
  return find_command(rest.front()).run({"--help"}, g);
}

}  // namespace

torch::Device GlobalOptions::torch_device() const {
  torch::Device d(torch::kCPU);
  try {
    d = torch::Device(device);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--device: '{}' is not a device (use cpu or cuda[:N])", device));
  }
  if (d.is_cuda() && !torch::cuda::is_available())
    throw UsageError(fmt::format(
        "--device {}: this LibTorch build has no usable CUDA; use --device cpu or build against "
        "a CUDA LibTorch (see README)",
        device));
  return d;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

std::vector<double> parse_number_list(const std::string& text, const std::string& flag) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) {
    try {
      std::size_t used = 0;
      out.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{}: '{}' is not a number (expected a comma-separated list "
                                   "such as 0.25,0.5)",
                                   flag, item));
    }
  }
  return out;
}

void emit_result(const nlohmann::json& json, const std::string& text, const std::string& out_file,
                 bool as_json) {
  if (!out_file.empty()) pruner::write_file_atomic(out_file, json.dump(2) + "\n");
  if (as_json)
    std::cout << json.dump(2) << "\n";
  else
    std::cout << text;
}

std::vector<int64_t> parse_positive_list(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  for (double v : parse_number_list(text, flag)) {
    if (v < 1 || v != static_cast<double>(static_cast<int64_t>(v)))
      throw UsageError(fmt::format("{}: {} is not a positive integer", flag, v));
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"prune", "the whole job: train gates, remove heads, verify, benchmark, report", run_prune},
      {"sweep", "prune at several targets, evaluate and benchmark each, plot quality vs speed", run_sweep},
      {"inspect", "print a checkpoint's architecture: heads per layer, parameters, FLOPs",
       run_inspect},
      {"train-gates", "learn which heads matter (hard-concrete L0 gates, self-distillation)",
       run_train_gates},
      {"launch", "start the ranks of a data-parallel train-gates or prune on this machine", run_launch},
      {"apply", "remove heads (from gates or a list) and write a smaller checkpoint", run_apply},
      {"export-onnx", "write a checkpoint as one ONNX model for ONNX Runtime", run_export_onnx},
      {"export-gguf", "write a LLaMA-style decoder (LLaMA, Mistral, Qwen2, Qwen3, Phi-3, Gemma 3) as one GGUF file for llama.cpp", run_export_gguf},
      {"bench", "time a dense and a pruned checkpoint side by side", run_bench},
      {"bench-training", "time a gate-training step against a plain dense forward+backward",
       run_bench_training},
      {"eval", "quality: STS-B Spearman, classification or zero-shot task accuracy, fidelity to the dense original", run_eval},
      {"embed", "write sentence embeddings of a text file (sentence-transformers pipeline)", run_embed},
      {"heads", "what each head does on real text: positional, syntactic, rare-token, sink roles",
       run_heads},
      {"report", "show the surviving heads of a gates folder or checkpoint (table, JSON, SVG)",
       run_report},
      {"generate", "sample text from a decoder checkpoint, .gguf or llama2.c .bin (smoke check)",
       run_generate},
      {"convert-llama2c", "turn a llama2.c .bin (+ tokenizer) into an HF LLaMA folder",
       run_convert_llama2c},
      {"convert-gguf", "turn a llama.cpp GGUF decoder (+ its tokenizer) into an HF folder",
       run_convert_gguf},
  };
  return table;
}

int run(int argc, const char* const* argv) {
  GlobalOptions g;
  auto globals = global_options(g);
  globals.add_options()("help,h", "show help");
  try {
    std::vector<std::string> all(argv + 1, argv + argc);
    // Everything from "--" on is a command for `launch` to run: no global option is taken from it.
    const auto dashes = std::find(all.begin(), all.end(), "--");
    const std::vector<std::string> verbatim(dashes, all.end());
    all.erase(dashes, all.end());
    po::variables_map vm;
    std::vector<std::string> rest;
    try {
      auto parsed = po::command_line_parser(all).options(globals).allow_unregistered().run();
      po::store(parsed, vm);
      po::notify(vm);
      rest = po::collect_unrecognized(parsed.options, po::include_positional);
      rest.insert(rest.end(), verbatim.begin(), verbatim.end());
    } catch (const po::error& e) {
      throw UsageError(e.what());
    }
    if (vm.count("version")) {
      const auto kernels = pruner::openblas_kernels();
      fmt::print("headprune {} (LibTorch {}{})\n", HEADPRUNE_VERSION, TORCH_VERSION,
                 kernels.empty() ? "" : fmt::format(", OpenBLAS {} kernels", kernels));
      return 0;
    }
    if (rest.empty()) {
      print_overview();
      return vm.count("help") ? 0 : 2;
    }
    const std::string name = rest.front();
    rest.erase(rest.begin());
    if (name == "help") return run_help(rest);
    if (vm.count("help")) rest.push_back("--help");
    const auto& command = find_command(name);
    log::level() = log::parse_level(vm.count("quiet") ? "warn" : g.log_level);
    if (g.threads < 0) throw UsageError("--threads must be >= 0");
    pruner::set_thread_pools(g.threads > 0 ? g.threads : default_threads());
    torch::manual_seed(g.seed);
    return command.run(rest, g);
  } catch (const UsageError& e) {
    fmt::print(stderr, "headprune: usage error: {}\n", e.what());
    return 2;
  } catch (const pruner::Interrupted& e) {
    fmt::print(stderr, "headprune: {}\n", e.what());
    return 128 + e.signal_number();
  } catch (const c10::Error& e) {  // its what() carries LibTorch's C++ stack trace
    fmt::print(stderr, "headprune: error: {}\n", first_line(e.what_without_backtrace()));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "headprune: error: {}\n", e.what());
    return 1;
  }
}

std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')); }

[[noreturn]] void report_uncaught_exception() {
  std::string what = "an unknown exception";
  try {
    if (const auto current = std::current_exception()) std::rethrow_exception(current);
    what = "std::terminate was called";
  } catch (const c10::Error& e) {
    what = first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    what = first_line(e.what());
  } catch (...) {
  }
  fmt::print(stderr, "headprune: error: {} (in a thread of its own or while unwinding)\n", what);
  std::fflush(stderr);  // _Exit flushes nothing
  std::_Exit(1);
}

}  // namespace headprune::cli
