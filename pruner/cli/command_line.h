// One subcommand's command line: positional arguments, grouped options with typed
// metavariables, old spellings kept as hidden aliases, examples, and the help built from them.
// Every subcommand parses through a CommandLine, so `--help`, the parser and the option table
// in docs/cli.md (`headprune help --markdown`) come from the same declarations.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace headprune::cli {

namespace po = boost::program_options;

/// A value option with a metavariable (`DIR`, `N`, `FILE...`) in --help.
template <typename T>
po::typed_value<T>* arg(T* target, const char* metavar) {
  return po::value<T>(target)->value_name(metavar);
}
/// The same with a default, shown as written ("0.1", never "0.10000000000000001").
po::typed_value<double>* arg(double* target, const char* metavar, double default_value);
po::typed_value<std::string>* arg(std::string* target, const char* metavar,
                                  const std::string& default_value);
template <typename T>
po::typed_value<T>* arg(T* target, const char* metavar, const T& default_value) {
  return po::value<T>(target)->value_name(metavar)->default_value(default_value);
}

/// One option as documented: for `--help` and the table in docs/cli.md.
struct OptionRow {
  std::string command;
  std::string group;      ///< "Required", "Output", "Training", ...
  std::string flag;       ///< "--out" (with "-o, " in front when it has a short form)
  std::string metavar;    ///< "DIR", "N (=300)", or "" for a switch
  std::string help;
  std::vector<std::string> aliases;  ///< old spellings still accepted (hidden from --help)
};

/// The captions of option groups, in the order --help lists them.
namespace group {
inline constexpr const char* kRequired = "Required";
inline constexpr const char* kTarget = "Target";
inline constexpr const char* kOutput = "Output";
inline constexpr const char* kTraining = "Training";
inline constexpr const char* kText = "Training text";
inline constexpr const char* kAdvanced = "Advanced training";
inline constexpr const char* kBench = "Benchmark";
inline constexpr const char* kRefit = "Recovery after removal";
inline constexpr const char* kResume = "Resume";
inline constexpr const char* kDistributed = "Distributed";
inline constexpr const char* kOptions = "Options";
}  // namespace group

/// A subcommand's command line.
class CommandLine {
 public:
  /// `name` is the subcommand ("prune"), `usage` its synopsis after "headprune "; the summary
  /// shown in --help is the command table's.
  CommandLine(std::string name, std::string usage);

  /// A positional argument, shown as METAVAR under "Arguments" (also accepted as --KEY).
  /// Required unless `optional`.
  CommandLine& positional(const char* key, const char* metavar, std::string* target, const char* help,
                          bool optional = false);
  /// The options of group `caption` (created on first use; groups print in creation order).
  po::options_description& group(const std::string& caption);
  /// Accept `old_flag` (e.g. "--batch") as `new_flag` with a note on stderr; hidden from --help.
  CommandLine& alias(const std::string& old_flag, const std::string& new_flag);
  /// An example for --help: the command line (after "headprune ") and what it does.
  CommandLine& example(const std::string& line, const std::string& what);

  /// Parses `args`. Prints the help and returns false on -h/--help.
  /// @throws headprune::UsageError on an unknown option (with the nearest known one), a
  /// missing argument or a bad value, naming the usage.
  bool parse(const std::vector<std::string>& args, po::variables_map& vm);

  /// The help text (usage, summary, arguments, groups, global options, examples).
  std::string help() const;
  /// Every option as a row (aliases attached), positional arguments first.
  std::vector<OptionRow> rows() const;
  const std::string& name() const { return name_; }

 private:
  std::vector<std::string> rewrite_aliases(const std::vector<std::string>& args) const;
  [[noreturn]] void explain_missing(const std::string& key, const po::variables_map& vm) const;
  std::string nearest_option(const std::string& typed) const;

  struct Positional {
    std::string key, metavar, help;
    bool optional;
  };
  std::string name_, usage_;
  std::vector<Positional> positionals_;
  po::options_description hidden_;
  std::vector<std::pair<std::string, std::shared_ptr<po::options_description>>> groups_;
  std::vector<std::pair<std::string, std::string>> aliases_;
  std::vector<std::pair<std::string, std::string>> examples_;
};

/// Collects the CommandLines of every subcommand without running any: while one is in scope,
/// CommandLine::parse records itself and throws DescribeOnly instead of parsing.
class DescribeScope {
 public:
  DescribeScope();
  ~DescribeScope();
  DescribeScope(const DescribeScope&) = delete;
  DescribeScope& operator=(const DescribeScope&) = delete;
  const std::vector<OptionRow>& rows() const { return rows_; }
  void add(const CommandLine& line);

 private:
  std::vector<OptionRow> rows_;
};
/// Thrown by CommandLine::parse inside a DescribeScope.
struct DescribeOnly {};

/// The global options, for display in every command's help (parsed by cli::run).
const po::options_description& global_options_help();

/// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace headprune::cli
