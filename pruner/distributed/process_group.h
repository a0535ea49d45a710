// Data-parallel training across processes: where this process stands among the ranks and the
// collectives the training loop needs, over LibTorch's c10d process groups (Gloo on CPU and
// TCP, NCCL on GPUs where the LibTorch has it) — the transport PyTorch's DDP and torchrun use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

namespace headprune::pruner {

/// The launcher's environment, as torchrun and `headprune launch` set it (Slurm's
/// SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID stand in for RANK / WORLD_SIZE / LOCAL_RANK).
struct DistributedEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;

  /// Reads RANK, WORLD_SIZE, LOCAL_RANK (default 0), MASTER_ADDR and MASTER_PORT.
  /// @throws headprune::Error naming the missing or malformed variable and how to start ranks.
  static DistributedEnvironment from_environment();

  /// WORLD_SIZE (or SLURM_NTASKS) when set, else 1: used to refuse a launched process that
  /// was not told to join (`--distributed` missing).
  static int launched_world_size();
};

/// How to join: backend ("gloo" or "nccl"; empty = by device) and the seconds a rank waits
/// for its peers (at rendezvous and in every collective) before it gives up.
struct DistributedOptions {
  std::string backend;
  int64_t timeout_seconds = 300;
};

/// This process's place among the ranks of a job and the collectives over them. The default
/// group is the single process (rank 0 of 1), whose collectives change nothing. All ranks must
/// call the same collectives in the same order.
class ProcessGroup {
 public:
  ProcessGroup();
  ~ProcessGroup();
  ProcessGroup(ProcessGroup&&) noexcept;
  ProcessGroup& operator=(ProcessGroup&&) noexcept;

  /// Joins the job the environment describes: a TCPStore on MASTER_ADDR:MASTER_PORT (rank 0
  /// serves it) and a Gloo (or NCCL) process group over it. Blocks until every rank joined.
  /// @throws headprune::Error for a backend this LibTorch lacks, a CUDA device (LOCAL_RANK does
  ///         not pick a GPU yet), a bad environment, or peers
  ///         that do not all arrive within the timeout (the message names the address).
  static ProcessGroup join(const DistributedOptions& options, const torch::Device& device);

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  bool is_main() const { return rank_ == 0; }
  bool distributed() const { return world_size_ > 1; }

  /// Sums `t` over all ranks, in place (any floating dtype, on the group's device).
  /// @throws headprune::Error when a peer exited or did not answer within the timeout.
  void all_reduce_sum(torch::Tensor& t) const;

  /// The sum over ranks of `t` (a copy; `t` is not changed and carries no gradient).
  torch::Tensor summed(const torch::Tensor& t) const;

  /// Sums the gradients of `parameters` over all ranks in one collective (an undefined
  /// gradient counts as zeros and is created).
  void sum_gradients(const std::vector<torch::Tensor>& parameters) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int world_size_ = 1;
};

}  // namespace headprune::pruner
