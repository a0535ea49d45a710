#include "pruner/distributed/process_group.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#ifdef HEADPRUNE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

#include "models/errors.h"

namespace headprune::pruner {
namespace {

constexpr const char* kHowToStart =
    "start the ranks with `headprune launch --nproc N -- headprune ...`, torchrun or srun, which "
    "set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT";

/// The first of `names` that is set, with its name.
std::optional<std::pair<std::string, std::string>> first_set(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* value = std::getenv(name); value && *value) return std::make_pair(std::string(name), std::string(value));
  return std::nullopt;
}

/// The integer in the first set variable of `names`, within [low, high]; `fallback` if none is set.
/// @throws headprune::Error for a missing variable (without fallback) or a malformed value.
int int_variable(std::initializer_list<const char*> names, int low, int high, std::optional<int> fallback) {
  const auto found = first_set(names);
  if (!found) {
    if (fallback) return *fallback;
    throw Error(fmt::format("--distributed: {} is not set; {}", *names.begin(), kHowToStart));
  }
  char* end = nullptr;
  const long value = std::strtol(found->second.c_str(), &end, 10);
  if (*end != '\0' || value < low || value > high)
    throw Error(fmt::format("--distributed: {}={} is not a whole number in [{}, {}]", found->first,
                            found->second, low, high));
  return static_cast<int>(value);
}

/// True under torchrun, whose agent serves the store on MASTER_PORT.
bool torchrun_agent_store() {
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  return agent != nullptr && std::string(agent) == "True";
}

}  // namespace

DistributedEnvironment DistributedEnvironment::from_environment() {
  DistributedEnvironment e;
  e.world_size = int_variable({"WORLD_SIZE", "SLURM_NTASKS"}, 1, 1 << 20, std::nullopt);
  e.rank = int_variable({"RANK", "SLURM_PROCID"}, 0, e.world_size - 1, std::nullopt);
  e.local_rank = int_variable({"LOCAL_RANK", "SLURM_LOCALID"}, 0, e.world_size - 1, 0);
  const auto addr = first_set({"MASTER_ADDR"});
  if (!addr) throw Error(fmt::format("--distributed: MASTER_ADDR is not set; {}", kHowToStart));
  e.master_addr = addr->second;
  e.master_port = int_variable({"MASTER_PORT"}, 1, torchrun_agent_store() ? 65534 : 65535, std::nullopt);
  return e;
}

int DistributedEnvironment::launched_world_size() {
  const auto found = first_set({"WORLD_SIZE", "SLURM_NTASKS"});
  if (!found) return 1;
  return std::atoi(found->second.c_str());
}

#ifdef HEADPRUNE_GLOO
struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::chrono::milliseconds timeout;
};

namespace {

/// The network device Gloo binds: GLOO_SOCKET_IFNAME's interface if set, loopback when the
/// master is on this machine's loopback, else the address this machine's hostname resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  if (master_addr == "localhost" || master_addr.rfind("127.", 0) == 0)
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

/// The rendezvous store, served by rank 0 on MASTER_PORT. Under torchrun
/// (TORCHELASTIC_USE_AGENT_STORE=True) the agent already serves a store there, whose protocol
/// Debian's LibTorch 1.13 client does not speak (torch 2.15's torchrun: a socket timeout, and a
/// reset with USE_LIBUV=0): rank 0 then serves ours on MASTER_PORT + 1.
c10::intrusive_ptr<c10d::Store> rendezvous_store(const DistributedEnvironment& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port + (torchrun_agent_store() ? 1 : 0));
  options.isServer = env.rank == 0;
  options.numWorkers = static_cast<std::size_t>(env.world_size);
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
}

/// The first line of a c10d/Gloo message (they append C++ stack traces).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

ProcessGroup ProcessGroup::join(const DistributedOptions& o, const torch::Device& device) {
  const std::string backend = o.backend.empty() ? (device.is_cuda() ? "nccl" : "gloo") : o.backend;
  if (backend == "nccl")
    throw Error("--backend nccl: this build of headprune has no NCCL process group (Debian's LibTorch is "
                "CPU-only); use --backend gloo");
  if (backend != "gloo") throw UsageError(fmt::format("--backend {}: expected gloo or nccl", backend));
  // LOCAL_RANK does not pick a GPU yet: every rank would share the one --device names.
  if (device.is_cuda())
    throw Error("--distributed on --device cuda is not supported yet (each rank would use the same GPU); "
                "train data-parallel on --device cpu");
  const auto env = DistributedEnvironment::from_environment();
  const std::chrono::milliseconds timeout(o.timeout_seconds * 1000);
  ProcessGroup g;
  g.rank_ = env.rank;
  g.world_size_ = env.world_size;
  g.impl_ = std::make_unique<Impl>();
  g.impl_->timeout = timeout;
  try {
    auto store = rendezvous_store(env, timeout);
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(gloo_device(env.master_addr));
    g.impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, options);
  } catch (const std::exception& e) {
    throw Error(fmt::format("--distributed: rank {} of {} could not meet its peers at {}:{} within {} s "
                            "(--dist-timeout): {}",
                            env.rank, env.world_size, env.master_addr, env.master_port + (torchrun_agent_store() ? 1 : 0),
                            o.timeout_seconds, first_line(e.what())));
  }
  return g;
}

void ProcessGroup::all_reduce_sum(torch::Tensor& t) const {
  if (!impl_) return;
  std::vector<at::Tensor> tensors{t};
  try {
    impl_->group->allreduce(tensors)->wait(impl_->timeout);
  } catch (const std::exception& e) {
    throw Error(fmt::format("distributed training: rank {} of {} lost its peers (a rank exited or did not "
                            "answer within {} s): {}; every rank stops",
                            rank_, world_size_, impl_->timeout.count() / 1000, first_line(e.what())));
  }
}
#else
struct ProcessGroup::Impl {};

ProcessGroup ProcessGroup::join(const DistributedOptions&, const torch::Device&) {
  throw Error("--distributed: this build of headprune has no Gloo process group (install Debian's "
              "libgloo-dev and rebuild: scripts/setup)");
}

void ProcessGroup::all_reduce_sum(torch::Tensor&) const {}
#endif

ProcessGroup::ProcessGroup() = default;
ProcessGroup::~ProcessGroup() = default;
ProcessGroup::ProcessGroup(ProcessGroup&&) noexcept = default;
ProcessGroup& ProcessGroup::operator=(ProcessGroup&&) noexcept = default;

torch::Tensor ProcessGroup::summed(const torch::Tensor& t) const {
  auto copy = t.detach().clone().contiguous();
  all_reduce_sum(copy);
  return copy;
}

void ProcessGroup::sum_gradients(const std::vector<torch::Tensor>& parameters) const {
  if (!distributed()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad().reshape(-1));
  }
  auto flat = torch::cat(grads);
  all_reduce_sum(flat);
  int64_t offset = 0;
  for (const auto& p : parameters) {
    const auto n = p.numel();
    p.mutable_grad().copy_(flat.slice(0, offset, offset + n).view_as(p));
    offset += n;
  }
}

}  // namespace headprune::pruner
