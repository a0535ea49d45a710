// Running the command line in-process, as a user would type it, for the CLI tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pruner/cli/command.h"
#include "tests/test_support.h"
#include "tests/tiny_model.h"

namespace headprune::testing {

/// `headprune ARGS...`; returns the exit code (0 ok, 1 error, 2 usage).
inline int run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "headprune");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return cli::run(static_cast<int>(argv.size()), argv.data());
}

/// A tiny checkpoint folder and a small real-text corpus (English sentences).
struct Workspace {
  std::filesystem::path dir, model, corpus;
  explicit Workspace(const std::string& tag)
      : dir(temp_dir(tag)), model(dir / "model"), corpus(dir / "corpus.txt") {
    write_tiny_folder(tiny_checkpoint(2, 4), model);
    std::ofstream out(corpus);
    const char* sentences[] = {
        "the cat sat on the mat.", "a quick brown fox jumps over the lazy dog.",
        "to be or not to be, that is the question.", "all that glitters is not gold.",
        "the early bird catches the worm.", "actions speak louder than words.",
        "knowledge is power.", "time and tide wait for no man.",
        "where there is a will, there is a way.", "the pen is mightier than the sword."};
    for (int rep = 0; rep < 8; ++rep)
      for (const auto* s : sentences) out << s << (rep % 2 ? "\r\n" : "\n") << "\n";
  }
};

}  // namespace headprune::testing
