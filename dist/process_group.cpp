#include "kiln/dist/process_group.h"

#include <cstdlib>
#include <cstring>

#include "kiln/dist/comm_thread.h"
#include "kiln/engine/bytes.h"

namespace kiln::dist {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The first of `names` that is set, as an integer; `fallback` when none is.
long long env_int(std::initializer_list<const char*> names, long long fallback) {
  for (const char* name : names) {
    if (const char* v = env(name)) {
      char* end = nullptr;
      const long long x = std::strtoll(v, &end, 10);
      KILN_CHECK(end != v && *end == '\0', "dist.rendezvous", std::string(name) + "='" + v + "' is not an integer");
      return x;
    }
  }
  return fallback;
}

std::string signature(const Tensor& t) { return std::string(dtype_name(t.dtype())) + t.shape().str(); }

}  // namespace

bool launched_distributed() { return env("KILN_WORLD_SIZE") != nullptr || env("WORLD_SIZE") != nullptr; }

RendezvousOptions rendezvous_from_env() {
  RendezvousOptions o;
  o.rank = static_cast<int>(env_int({"KILN_RANK", "RANK"}, 0));
  o.world_size = static_cast<int>(env_int({"KILN_WORLD_SIZE", "WORLD_SIZE"}, 1));
  if (const char* dir = env("KILN_RENDEZVOUS_DIR")) o.dir = dir;
  if (const char* redis = env("KILN_RENDEZVOUS_REDIS")) o.redis = redis;
  KILN_CHECK(!o.dir.empty() || !o.redis.empty() || o.world_size == 1 || env("MASTER_ADDR") == nullptr,
             "dist.rendezvous",
             "MASTER_ADDR/MASTER_PORT rendezvous (torchrun's TCP store) is not supported: set KILN_RENDEZVOUS_DIR to a "
             "directory every rank can reach (a shared file system across machines) or KILN_RENDEZVOUS_REDIS to a "
             "Redis server's host:port, or start the job with kiln-launch");
  if (const char* id = env("KILN_RUN_ID")) o.run_id = id;
  if (const char* host = env("KILN_DIST_HOST")) o.host = host;
  if (const char* iface = env("KILN_DIST_IFACE")) o.iface = iface;
  if (const char* t = env("KILN_DIST_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(t, &end);
    KILN_CHECK(end != t && *end == '\0' && seconds > 0, "dist.rendezvous",
               std::string("KILN_DIST_TIMEOUT='") + t + "' is not a positive number of seconds");
    o.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  }
  return o;
}

struct ProcessGroup::State {
  std::unique_ptr<Collective> collective;
  std::chrono::milliseconds timeout;
  detail::CommThread thread;  // declared last: joined before the collective goes

  void run(const std::function<void(Collective&)>& job) {
    thread.submit([this, &job] { job(*collective); }).get();
  }
};

ProcessGroup::ProcessGroup(const RendezvousOptions& options)
    : ProcessGroup(make_gloo_collective(options), options.timeout) {}

ProcessGroup::ProcessGroup(std::unique_ptr<Collective> collective, std::chrono::milliseconds timeout) {
  KILN_CHECK(collective != nullptr, "dist.ProcessGroup", "the collective is null");
  state_ = std::make_unique<State>();
  state_->collective = std::move(collective);
  state_->timeout = timeout;
}

ProcessGroup::ProcessGroup(ProcessGroup&&) noexcept = default;
ProcessGroup& ProcessGroup::operator=(ProcessGroup&&) noexcept = default;
ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return state_->collective->rank(); }
int ProcessGroup::world_size() const { return state_->collective->world_size(); }
std::chrono::milliseconds ProcessGroup::timeout() const { return state_->timeout; }
std::string ProcessGroup::backend() const { return state_->collective->backend(); }

std::future<void> ProcessGroup::submit(std::function<void(Collective&)> job) {
  State* s = state_.get();
  return s->thread.submit([s, job = std::move(job)] { job(*s->collective); });
}

void ProcessGroup::barrier() {
  const auto timeout = state_->timeout;
  state_->run([&](Collective& c) { c.barrier(timeout); });
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& text) {
  const auto timeout = state_->timeout;
  const auto world = static_cast<std::size_t>(world_size());
  std::vector<std::int64_t> lengths(world);
  const auto mine = static_cast<std::int64_t>(text.size());
  std::string padded;
  std::vector<char> all;
  state_->run([&](Collective& c) {
    c.all_gather(&mine, lengths.data(), sizeof mine, timeout);
    std::int64_t longest = 0;
    for (std::int64_t n : lengths) longest = std::max(longest, n);
    padded = text;
    padded.resize(static_cast<std::size_t>(longest));
    all.resize(world * padded.size());
    c.all_gather(padded.data(), all.data(), padded.size(), timeout);
  });
  std::vector<std::string> out;
  for (std::size_t r = 0; r < world; ++r)
    out.emplace_back(all.data() + r * padded.size(), static_cast<std::size_t>(lengths[r]));
  return out;
}

// Every rank learns every rank's dtype and shape, and all throw the same error when they differ:
// a mismatch never leaves one rank waiting in the data exchange for a partner that left.
static void check_agree(ProcessGroup& g, const char* op, const Tensor& t) {
  KILN_CHECK(t.defined(), op, "the tensor is undefined");
  const std::vector<std::string> all = g.all_gather(signature(t));
  for (const std::string& s : all) {
    if (s == all[0]) continue;
    std::string msg = "the ranks' tensors differ:";
    for (std::size_t r = 0; r < all.size(); ++r)
      msg += " rank " + std::to_string(r) + " " + all[r] + (r + 1 < all.size() ? "," : "");
    throw Error(op, msg);
  }
}

// t's values on the host, and a tensor of t's kind made from host bytes.
static std::shared_ptr<std::vector<std::byte>> host_bytes(const Tensor& t) {
  return std::make_shared<std::vector<std::byte>>(to_bytes(t).get());
}
static Tensor like(const Tensor& t, std::shared_ptr<std::vector<std::byte>> bytes) {
  return from_bytes(std::move(bytes), t.shape(), t.dtype(), t.device());
}

Tensor ProcessGroup::all_reduce(const Tensor& t, ReduceOp op) {
  const char* name = "dist.all_reduce";
  KILN_CHECK(t.defined() && (t.dtype() == DType::f32 || t.dtype() == DType::i64), name,
             std::string("reduces f32 and i64 tensors, got ") + (t.defined() ? signature(t) : "an undefined tensor"));
  KILN_CHECK(!(t.dtype() == DType::i64 && op == ReduceOp::mean), name,
             "the mean of i64 tensors is not an integer: reduce with sum and divide, or cast to f32 first");
  check_agree(*this, name, t);
  auto bytes = host_bytes(t);
  const Element type = t.dtype() == DType::f32 ? Element::f32 : Element::i64;
  const std::size_t count = static_cast<std::size_t>(t.numel());
  const auto timeout = state_->timeout;
  state_->run([&](Collective& c) { c.all_reduce(bytes->data(), count, type, op, timeout); });
  if (op == ReduceOp::mean) {
    auto* f = reinterpret_cast<float*>(bytes->data());
    const float world = static_cast<float>(world_size());
    for (std::size_t i = 0; i < count; ++i) f[i] /= world;
  }
  return like(t, std::move(bytes));
}

Tensor ProcessGroup::broadcast(const Tensor& t, int root) {
  const char* name = "dist.broadcast";
  KILN_CHECK(root >= 0 && root < world_size(), name,
             "root " + std::to_string(root) + " is outside a world of " + std::to_string(world_size()));
  check_agree(*this, name, t);
  auto bytes = host_bytes(t);
  const auto timeout = state_->timeout;
  state_->run([&](Collective& c) { c.broadcast(bytes->data(), bytes->size(), root, timeout); });
  return like(t, std::move(bytes));
}

std::vector<Tensor> ProcessGroup::all_gather(const Tensor& t) {
  check_agree(*this, "dist.all_gather", t);
  const auto in = host_bytes(t);
  std::vector<std::byte> all(in->size() * static_cast<std::size_t>(world_size()));
  const auto timeout = state_->timeout;
  state_->run([&](Collective& c) { c.all_gather(in->data(), all.data(), in->size(), timeout); });
  std::vector<Tensor> out;
  for (int r = 0; r < world_size(); ++r) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(r * in->size());
    out.push_back(
        like(t, std::make_shared<std::vector<std::byte>>(first, first + static_cast<std::ptrdiff_t>(in->size()))));
  }
  return out;
}

double ProcessGroup::all_reduce(double value, ReduceOp op) {
  const auto timeout = state_->timeout;
  state_->run([&](Collective& c) { c.all_reduce(&value, 1, Element::f64, op, timeout); });
  return op == ReduceOp::mean ? value / world_size() : value;
}

}  // namespace kiln::dist
