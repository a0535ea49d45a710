// Stopping a training run cleanly when the user or a scheduler asks (Ctrl-C = SIGINT, a
// preemption = SIGTERM): the run finishes its current step, writes a snapshot and ends with
// a message naming the resume command. A second signal ends the process at once, as usual.
#pragma once

#include <csignal>
#include <string>

#include "models/errors.h"

namespace headprune::pruner {

/// While alive, SIGINT and SIGTERM only set a flag that interrupt_signal() reports (the
/// previous handlers come back when it is destroyed). The second signal restores the default
/// handler and re-raises it. One guard at a time (the training loop holds it).
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  void (*previous_int_)(int) = nullptr;
  void (*previous_term_)(int) = nullptr;
};

/// The signal received since the guard was installed (SIGINT or SIGTERM), or 0.
int interrupt_signal();

/// Thrown by the training loop after it saved a snapshot on a signal. cli::run prints the
/// message and exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM), as a
/// shell reports a process ended by that signal.
class Interrupted : public Error {
 public:
  Interrupted(int signal_number, const std::string& what) : Error(what), signal_(signal_number) {}
  int signal_number() const { return signal_; }

 private:
  int signal_;
};

/// "SIGINT", "SIGTERM" or "signal N".
std::string signal_name(int signal_number);

}  // namespace headprune::pruner
