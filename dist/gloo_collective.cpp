// The Gloo backend: a full mesh of TCP pairs made through Gloo's file store, and Gloo's own
// collective algorithms (ring all-reduce, one-to-all broadcast, ring all-gather). Gloo throws
// its own exceptions on a lost peer or a timeout; they come out as kiln::Error naming the op,
// this rank and the cause.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/redis_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "kiln/base/error.h"
#include "kiln/base/log.h"
#include "kiln/dist/collective.h"

namespace kiln::dist {

std::size_t element_size(Element e) {
  switch (e) {
    case Element::f32: return 4;
    case Element::f64: return 8;
    case Element::i64: return 8;
  }
  return 0;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::mean: return "mean";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

namespace {

using ReduceFn = void (*)(void*, const void*, const void*, std::size_t);

template <class T>
ReduceFn reduce_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return &gloo::sum<T>;
    case ReduceOp::max: return &gloo::max<T>;
    case ReduceOp::min: return &gloo::min<T>;
  }
  return nullptr;
}

// Where the ranks leave their addresses: files in a directory, or a Redis server.
std::unique_ptr<gloo::rendezvous::Store> make_store(const RendezvousOptions& o) {
  if (o.redis.empty()) return std::make_unique<gloo::rendezvous::FileStore>(o.dir);
  const std::size_t colon = o.redis.rfind(':');
  const std::string host = colon == std::string::npos ? o.redis : o.redis.substr(0, colon);
  const int port = colon == std::string::npos ? 6379 : std::atoi(o.redis.c_str() + colon + 1);
  return std::make_unique<gloo::rendezvous::RedisStore>(host, port);
}

class GlooCollective final : public Collective {
 public:
  explicit GlooCollective(const RendezvousOptions& o) : rank_(o.rank), world_(o.world_size) {
    gloo::transport::tcp::attr attr;
    if (!o.iface.empty())
      attr.iface = o.iface;
    else
      attr.hostname = o.host;
    guarded(
        "rendezvous",
        [&] {
          auto device = gloo::transport::tcp::CreateDevice(attr);
          const std::unique_ptr<gloo::rendezvous::Store> shared = make_store(o);
          gloo::rendezvous::PrefixStore store(o.run_id, *shared);
          auto context = std::make_shared<gloo::rendezvous::Context>(rank_, world_);
          context->setTimeout(o.timeout);
          context->connectFullMesh(store, device);
          context_ = std::move(context);
        },
        " (rendezvous " + (o.redis.empty() ? "directory " + o.dir : "through Redis at " + o.redis) + ", timeout " +
            std::to_string(o.timeout.count()) + " ms)");
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return "gloo"; }

  void all_reduce(void* data, std::size_t count, Element type, ReduceOp op,
                  std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    guarded("all_reduce", [&] {
      switch (type) {
        case Element::f32: reduce_as<float>(data, count, op, timeout); break;
        case Element::f64: reduce_as<double>(data, count, op, timeout); break;
        case Element::i64: reduce_as<std::int64_t>(data, count, op, timeout); break;
      }
    });
  }

  void broadcast(void* data, std::size_t bytes, int root, std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    guarded("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      auto* p = static_cast<char*>(data);
      if (rank_ == root) opts.setInput(p, bytes);
      opts.setOutput(p, bytes);
      opts.setRoot(root);
      opts.setTag(next_tag());
      opts.setTimeout(timeout);
      gloo::broadcast(opts);
    });
  }

  void all_gather(const void* in, void* out, std::size_t bytes, std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    guarded("all_gather", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes);
      opts.setOutput(static_cast<char*>(out), bytes * static_cast<std::size_t>(world_));
      opts.setTag(next_tag());
      opts.setTimeout(timeout);
      gloo::allgather(opts);
    });
  }

  void barrier(std::chrono::milliseconds timeout) override {
    guarded("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout);
      gloo::barrier(opts);
    });
  }

 private:
  // Typed, so that Gloo splits the buffer between ranks on element boundaries.
  template <class T>
  void reduce_as(void* data, std::size_t count, ReduceOp op, std::chrono::milliseconds timeout) {
    gloo::AllreduceOptions opts(context_);
    T* p = static_cast<T*>(data);
    opts.setInput(p, count);
    opts.setOutput(p, count);
    opts.setReduceFunction(reduce_fn<T>(op));
    opts.setTag(next_tag());
    opts.setTimeout(timeout);
    gloo::allreduce(opts);
  }

  std::uint32_t next_tag() { return tag_++; }

  // Runs fn; Gloo's exceptions (a peer gone, a timeout, a bad argument) become kiln::Error.
  void guarded(const char* op, const std::function<void()>& fn, const std::string& where = "") const {
    const std::string name = std::string("dist.") + op;
    try {
      fn();
    } catch (const gloo::IoException& e) {
      throw Error(name, "rank " + std::to_string(rank_) + " of " + std::to_string(world_) +
                            ": lost contact with another rank (it died, hung past the timeout, or is unreachable)" +
                            where + ": " + e.what());
    } catch (const gloo::Exception& e) {
      throw Error(name, "rank " + std::to_string(rank_) + " of " + std::to_string(world_) + where + ": " + e.what());
    } catch (const gloo::EnforceNotMet& e) {
      throw Error(name, "rank " + std::to_string(rank_) + " of " + std::to_string(world_) + where + ": " + e.what());
    }
  }

  int rank_;
  int world_;
  std::uint32_t tag_ = 0;
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace

std::unique_ptr<Collective> make_gloo_collective(const RendezvousOptions& o) {
  KILN_CHECK(o.world_size >= 1 && o.rank >= 0 && o.rank < o.world_size, "dist.rendezvous",
             "rank " + std::to_string(o.rank) + " is outside a world of " + std::to_string(o.world_size) +
                 " processes (set KILN_RANK and KILN_WORLD_SIZE, or RANK and WORLD_SIZE)");
  KILN_CHECK(!o.dir.empty() || !o.redis.empty(), "dist.rendezvous",
             "no rendezvous: set KILN_RENDEZVOUS_DIR (kiln-launch does) to a directory every rank can reach, or "
             "KILN_RENDEZVOUS_REDIS to a Redis server's host:port");
  if (o.redis.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.dir, ec);
    KILN_CHECK(std::filesystem::is_directory(o.dir), "dist.rendezvous",
               "the rendezvous directory '" + o.dir + "' does not exist and cannot be made: " + ec.message());
  }
  // A write to a peer that died raises SIGPIPE, whose default action ends this process without a
  // word; ignored, the write fails and Gloo throws, and this rank reports the lost peer. Left
  // alone when the program handles SIGPIPE itself.
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
  logger().debug("dist: rank {} of {} meeting in {} (run '{}')", o.rank, o.world_size,
                 o.redis.empty() ? o.dir : "redis " + o.redis, o.run_id);
  return std::make_unique<GlooCollective>(o);
}

}  // namespace kiln::dist
