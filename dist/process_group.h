// A process group: this process's rank among world_size processes that run the same program,
// and the collectives between them on kiln tensors (PyTorch's torch.distributed, Burn's
// collective). Tensors on any device take part: their values pass through host memory.
//
//   dist::ProcessGroup group = dist::ProcessGroup::from_env();   // kiln-launch sets the env
//   Tensor total = group.all_reduce(local_sum);                  // every rank gets the sum
//   Tensor w = group.broadcast(w0);                               // rank 0's values everywhere
//   std::vector<Tensor> parts = group.all_gather(part);          // every rank's, in rank order
//
// Every collective is bounded by the group's timeout: a rank that died or hangs makes the others
// throw a kiln::Error (naming the op, the rank and the cause) instead of waiting forever. All
// ranks must call the same collectives in the same order, as in every collective library.
#pragma once
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "kiln/dist/collective.h"
#include "kiln/engine/kiln.h"

namespace kiln::dist {

// The rendezvous from the environment (kiln-launch sets the KILN_ names; torchrun's RANK and
// WORLD_SIZE are read when the KILN_ ones are unset):
//   KILN_RANK / RANK, KILN_WORLD_SIZE / WORLD_SIZE   this process's rank, the number of processes
//   KILN_RENDEZVOUS_DIR    a directory every rank reaches (fresh per run, or see KILN_RUN_ID)
//   KILN_RENDEZVOUS_REDIS  or a Redis server's host:port (machines without a shared file system)
//   KILN_RUN_ID            names this run's keys in the directory or Redis (default "run")
//   KILN_DIST_HOST         the address this rank listens on (default 127.0.0.1: one machine)
//   KILN_DIST_IFACE        or the network interface to listen on
//   KILN_DIST_TIMEOUT      seconds before a collective gives up (default 300)
// kiln::Error naming the variable when one is malformed.
RendezvousOptions rendezvous_from_env();
// True when the environment names a world (KILN_WORLD_SIZE or WORLD_SIZE is set).
bool launched_distributed();

class ProcessGroup {
 public:
  // Meets the other ranks (Gloo over TCP); blocks until all came or the timeout passed.
  explicit ProcessGroup(const RendezvousOptions& options);
  static ProcessGroup from_env() { return ProcessGroup(rendezvous_from_env()); }
  // Over a collective of the caller's (another library, a test double).
  ProcessGroup(std::unique_ptr<Collective> collective, std::chrono::milliseconds timeout);
  ProcessGroup(ProcessGroup&&) noexcept;
  ProcessGroup& operator=(ProcessGroup&&) noexcept;
  ~ProcessGroup();

  int rank() const;
  int world_size() const;
  bool is_main() const { return rank() == 0; }  // rank 0: the one that prints and saves
  std::chrono::milliseconds timeout() const;
  std::string backend() const;

  // Element-wise reduction over the ranks: a new tensor of t's shape, dtype and device on every
  // rank. f32 (sum, mean, max, min) and i64 (sum, max, min). Shapes and dtypes must agree on all
  // ranks (checked: every rank throws the same kiln::Error otherwise).
  Tensor all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum);
  // Rank `root`'s values on every rank (t's shape and dtype must agree, checked).
  Tensor broadcast(const Tensor& t, int root = 0);
  // Every rank's t, in rank order (shapes and dtypes must agree, checked).
  std::vector<Tensor> all_gather(const Tensor& t);
  // Scalars: a metric's sum or mean over the ranks.
  double all_reduce(double value, ReduceOp op = ReduceOp::sum);
  // Every rank's string (a parameter list, a file name), in rank order.
  std::vector<std::string> all_gather(const std::string& text);
  void barrier();

  // Runs job(collective) on the group's communication thread, after the collectives submitted
  // before it. What data parallelism overlaps with backward; most callers want the calls above.
  std::future<void> submit(std::function<void(Collective&)> job);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::dist
