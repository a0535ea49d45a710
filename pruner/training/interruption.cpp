#include "pruner/training/interruption.h"

#include <fmt/format.h>

namespace headprune::pruner {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void on_signal(int signal_number) {
  if (received != 0) {  // the second one: stop now
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
    return;
  }
  received = signal_number;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  received = 0;
  previous_int_ = std::signal(SIGINT, on_signal);
  previous_term_ = std::signal(SIGTERM, on_signal);
}

InterruptGuard::~InterruptGuard() {
  std::signal(SIGINT, previous_int_ == SIG_ERR ? SIG_DFL : previous_int_);
  std::signal(SIGTERM, previous_term_ == SIG_ERR ? SIG_DFL : previous_term_);
}

int interrupt_signal() { return static_cast<int>(received); }

std::string signal_name(int signal_number) {
  if (signal_number == SIGINT) return "SIGINT";
  if (signal_number == SIGTERM) return "SIGTERM";
  return fmt::format("signal {}", signal_number);
}

}  // namespace headprune::pruner
