// The collective backend behind a process group: host buffers in, host buffers out, every call
// bounded by a timeout. Gloo implements it (gloo_collective.cpp); another library (Open MPI)
// would be one more implementation of this interface and one more factory, nothing else.
//
// A collective is not thread-safe: the process group calls it from its one communication
// thread, in the same order on every rank (collectives match by order, as in MPI and Gloo).
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace kiln::dist {

enum class ReduceOp { sum, mean, max, min };
enum class Element { f32, f64, i64 };
std::size_t element_size(Element e);
const char* reduce_op_name(ReduceOp op);

// Where the ranks meet and how they talk. Filled from the environment by
// RendezvousOptions::from_env (process_group.h) or by hand.
struct RendezvousOptions {
  int rank = -1;
  int world_size = -1;
  // A directory every rank can reach (one machine, or a shared file system); rank addresses are
  // exchanged through files in it. It must not hold files of an earlier run (see run_id).
  std::string dir;
  // Or a Redis server every rank reaches ("host:port"), for machines without a shared file system;
  // used instead of `dir` when set. Keys stay in Redis: give every run its own run_id.
  std::string redis;
  // Keys of this run inside `dir` or Redis: ranks of different runs never meet.
  std::string run_id = "run";
  // The address this rank listens on for its peers (default: the loopback, for one machine).
  std::string host = "127.0.0.1";
  // Or the network interface to listen on (eth0); overrides host when set.
  std::string iface;
  // Bound on the rendezvous and on every collective: a rank that died or hangs makes the others
  // fail with a kiln::Error after at most this long, never wait forever.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend() const = 0;

  // In place: every rank ends with the element-wise reduction of all ranks' `count` elements.
  // ReduceOp::mean is a sum here (the caller divides, in its own dtype).
  virtual void all_reduce(void* data, std::size_t count, Element type, ReduceOp op,
                          std::chrono::milliseconds timeout) = 0;
  // `bytes` bytes of rank `root` copied into `data` on every other rank.
  virtual void broadcast(void* data, std::size_t bytes, int root, std::chrono::milliseconds timeout) = 0;
  // `out` (world_size * bytes) receives each rank's `in` (bytes), in rank order.
  virtual void all_gather(const void* in, void* out, std::size_t bytes, std::chrono::milliseconds timeout) = 0;
  virtual void barrier(std::chrono::milliseconds timeout) = 0;
};

// Connects to the other ranks through Gloo's TCP transport after a rendezvous in options.dir.
// kiln::Error naming the rank, the directory and the cause when the others do not come within
// options.timeout.
std::unique_ptr<Collective> make_gloo_collective(const RendezvousOptions& options);

}  // namespace kiln::dist
