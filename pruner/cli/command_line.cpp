#include "pruner/cli/command_line.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "models/errors.h"
#include "pruner/cli/command.h"
#include "pruner/log.h"

namespace headprune::cli {
namespace {

DescribeScope*& active_scope() {
  static DescribeScope* scope = nullptr;
  return scope;
}

/// "--out" plus "-o, " when the option has a short form.
std::string flag_of(const po::option_description& o) {
  const std::string shown = o.format_name();  // "-o [ --out ]" or "--out"
  const std::string longform = "--" + o.long_name();
  return shown.rfind("--", 0) == 0 ? longform : shown.substr(0, 2) + ", " + longform;
}

}  // namespace

po::typed_value<double>* arg(double* target, const char* metavar, double default_value) {
  return po::value<double>(target)->value_name(metavar)->default_value(
      default_value, fmt::format("{}", default_value));
}

po::typed_value<std::string>* arg(std::string* target, const char* metavar,
                                  const std::string& default_value) {
  return po::value<std::string>(target)->value_name(metavar)->default_value(
      default_value, default_value.empty() ? "\"\"" : default_value);
}

CommandLine::CommandLine(std::string name, std::string usage)
    : name_(std::move(name)), usage_(std::move(usage)) {}

CommandLine& CommandLine::positional(const char* key, const char* metavar, std::string* target,
                                     const char* help, bool optional) {
  // Not po-required: parse() names a missing argument itself, before any missing option.
  hidden_.add_options()(key, po::value<std::string>(target)->value_name(metavar), help);
  positionals_.push_back({key, metavar, help, optional});
  return *this;
}

po::options_description& CommandLine::group(const std::string& caption) {
  for (auto& [name, desc] : groups_)
    if (name == caption) return *desc;
  groups_.emplace_back(caption, std::make_shared<po::options_description>(caption));
  return *groups_.back().second;
}

CommandLine& CommandLine::alias(const std::string& old_flag, const std::string& new_flag) {
  aliases_.emplace_back(old_flag, new_flag);
  return *this;
}

CommandLine& CommandLine::example(const std::string& line, const std::string& what) {
  examples_.emplace_back(line, what);
  return *this;
}

std::vector<std::string> CommandLine::rewrite_aliases(const std::vector<std::string>& args) const {
  std::vector<std::string> out;
  for (const auto& a : args) {
    std::string word = a;
    for (const auto& [old_flag, new_flag] : aliases_) {
      const bool with_value = a.rfind(old_flag + "=", 0) == 0;
      if (a != old_flag && !with_value) continue;
      log::warn("{} is now spelled {} (the old spelling is accepted until headprune 0.3)", old_flag,
                new_flag);
      word = new_flag + a.substr(old_flag.size());
    }
    out.push_back(word);
  }
  return out;
}

std::string CommandLine::nearest_option(const std::string& typed) const {
  std::string best;
  std::size_t best_distance = 3;  // suggest only close misspellings
  const auto dashes = std::min(typed.find_first_not_of('-'), typed.size());
  auto consider = [&](const std::string& flag) {
    const std::string bare = typed.substr(dashes), known = flag.substr(2);
    const bool part = bare.size() >= 3 && known.size() >= 3 &&
                      (bare.find(known) != std::string::npos || known.find(bare) != std::string::npos);
    const auto d = part ? 1 : edit_distance(bare, known);
    if (d < best_distance) best_distance = d, best = flag;
  };
  for (const auto& [caption, desc] : groups_)
    for (const auto& o : desc->options()) consider("--" + o->long_name());
  for (const auto& o : global_options_help().options()) consider("--" + o->long_name());
  return best;
}

void CommandLine::explain_missing(const std::string& key, const po::variables_map& vm) const {
  const auto it = std::find_if(positionals_.begin(), positionals_.end(),
                               [&](const Positional& p) { return p.key == key; });
  if (it == positionals_.end())
    throw UsageError(fmt::format("--{} is required (usage: headprune {}; see --help)", key, usage_));
  // A folder swallowed by a multi-value option (`--data a.txt MODEL`) is the likely cause.
  for (const auto& [option, value] : vm) {
    const auto* items = boost::any_cast<std::vector<std::string>>(&value.value());
    if (items == nullptr) continue;
    for (const auto& item : *items)
      if (std::filesystem::is_directory(item))
        throw UsageError(fmt::format(
            "{} is missing: '{}' (a folder) was read as a --{} file, because --{} takes every word "
            "up to the next option; put {} first (usage: headprune {})",
            it->metavar, item, option, option, it->metavar, usage_));
  }
  throw UsageError(fmt::format("{} is missing (usage: headprune {}; see --help)", it->metavar, usage_));
}

bool CommandLine::parse(const std::vector<std::string>& args, po::variables_map& vm) {
  if (active_scope() != nullptr) {
    active_scope()->add(*this);
    throw DescribeOnly{};
  }
  po::options_description all;
  all.add(hidden_);
  for (const auto& [caption, desc] : groups_) all.add(*desc);
  all.add_options()("help,h", "show this help");
  po::positional_options_description pos;
  for (const auto& p : positionals_) pos.add(p.key.c_str(), 1);
  try {
    po::store(po::command_line_parser(rewrite_aliases(args)).options(all).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << help();
      return false;
    }
    for (const auto& p : positionals_)  // the arguments before the options they precede
      if (!p.optional && vm.count(p.key) == 0) explain_missing(p.key, vm);
    po::notify(vm);
  } catch (const po::required_option& e) {
    explain_missing(e.get_option_name().substr(2), vm);
  } catch (const po::unknown_option& e) {
    const auto near = nearest_option(e.get_option_name());
    throw UsageError(fmt::format("{} does not take {}{} (usage: headprune {}; see --help)", name_,
                                 e.get_option_name(), near.empty() ? "" : "; did you mean " + near + "?",
                                 usage_));
  } catch (const po::too_many_positional_options_error&) {
    throw UsageError(fmt::format("too many arguments (usage: headprune {}; see --help)", usage_));
  } catch (const po::error& e) {
    throw UsageError(fmt::format("{} (usage: headprune {}; see --help)", e.what(), usage_));
  }
  return true;
}

std::string CommandLine::help() const {
  std::ostringstream out;
  out << "usage: headprune " << usage_ << "\n";
  for (const auto& c : commands())
    if (c.name == name_) out << "\n" << c.summary << "\n";
  if (!positionals_.empty()) {
    out << "\nArguments:\n";
    for (const auto& p : positionals_) {
      // A metavariable too wide for the column gets its description on the next line.
      const auto pad = p.metavar.size() < 22 ? "" : "\n                        ";
      out << fmt::format("  {:<22}{}{}{}\n", p.metavar, pad, p.help, p.optional ? " (optional)" : "");
    }
  }
  for (const auto& [caption, desc] : groups_) out << "\n" << *desc;
  out << "\n" << global_options_help();
  if (!examples_.empty()) out << "\nExamples:\n";
  for (const auto& [line, what] : examples_) out << fmt::format("  # {}\n  headprune {}\n", what, line);
  return out.str();
}

std::vector<OptionRow> CommandLine::rows() const {
  std::vector<OptionRow> rows;
  for (const auto& p : positionals_)
    rows.push_back({name_, "Arguments", p.metavar, "", p.help, {}});
  for (const auto& [caption, desc] : groups_)
    for (const auto& o : desc->options()) {
      OptionRow row{name_, caption, flag_of(*o), o->format_parameter(), o->description(), {}};
      for (const auto& [old_flag, new_flag] : aliases_)
        if (new_flag == "--" + o->long_name()) row.aliases.push_back(old_flag);
      rows.push_back(row);
    }
  return rows;
}

DescribeScope::DescribeScope() { active_scope() = this; }
DescribeScope::~DescribeScope() { active_scope() = nullptr; }
void DescribeScope::add(const CommandLine& line) {
  const auto more = line.rows();
  rows_.insert(rows_.end(), more.begin(), more.end());
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace headprune::cli
