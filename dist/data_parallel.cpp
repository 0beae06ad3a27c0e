#include "kiln/dist/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <unordered_map>

#include "kiln/base/log.h"
#include "kiln/engine/bytes.h"

namespace kiln::dist {

namespace {

std::string describe_tensor(const std::string& path, const Tensor& t) {
  return path + " " + dtype_name(t.dtype()) + t.shape().str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    out.push_back(text.substr(at, end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// The first difference between rank 0's signature and rank r's, in words.
std::string first_difference(const std::string& zero, const std::string& other, int r) {
  const std::vector<std::string> a = lines(zero), b = lines(other);
  std::string msg = "the ranks hold different models (are they running the same program?): rank 0 has " +
                    std::to_string(a.size()) + " parameters and buffers, rank " + std::to_string(r) + " has " +
                    std::to_string(b.size());
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)", y = i < b.size() ? b[i] : "(nothing)";
    if (x != y)
      return msg + "; entry #" + std::to_string(i) + " is '" + x + "' on rank 0 and '" + y + "' on rank " +
             std::to_string(r);
  }
  return msg;
}

// A gradient read straight into its place in the bucket's host buffer: one copy from the device
// (or the CPU tensor), where to_vector's own vector and the insert after it made two, and an
// allocation per gradient, every step.
class ReadIntoBucket final : public Completion {
 public:
  ReadIntoBucket(float* at, std::size_t bytes) : at_(reinterpret_cast<std::byte*>(at)), bytes_(bytes) {}
  Promise<bool> done;
  std::byte* destination(std::size_t bytes) override { return bytes == bytes_ ? at_ : nullptr; }
  void complete_in_place() override { done.set_value(true); }
  void complete(const std::byte* data, std::size_t bytes) override {
    if (bytes != bytes_) {
      const std::string what = "a gradient of " + std::to_string(bytes) + " bytes where its parameter has " +
                               std::to_string(bytes_);
      done.set_exception(std::make_exception_ptr(Error("dist.GradientReducer", what)));
      return;
    }
    std::memcpy(at_, data, bytes);
    done.set_value(true);
  }
  void fail(std::exception_ptr error) override { done.set_exception(std::move(error)); }

 private:
  std::byte* at_;
  std::size_t bytes_;
};

// The gradients' values end to end in `flat` (sized for them), read one after the other: each
// read waits only for the ops its gradient needs, where one kernel laying the bucket end to end
// would queue behind all the backward submitted meanwhile. (Submitting every read first and then
// waiting made the collective slower on 2 cores, 5.4 -> 9.1 ms a step: the reads pulled backward's
// work forward out of the scheduler's batches.)
void read_bucket(const std::vector<Tensor>& grads, std::vector<float>& flat) {
  std::size_t at = 0;
  for (const Tensor& g : grads) {
    const auto n = static_cast<std::size_t>(g.numel());
    auto into = std::make_shared<ReadIntoBucket>(flat.data() + at, n * sizeof(float));
    auto state = into->done.state();
    Future<bool>(std::move(state), kiln::detail::submit_read(g, "dist.GradientReducer", DType::f32, into)).get();
    at += n;
  }
}

std::uint64_t nanoseconds(std::chrono::steady_clock::duration d) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

GradientReducerTimes GradientReducer::times() const {
  return {clocks_->steps.load(), clocks_->read_ns.load(), clocks_->all_reduce_ns.load(), clocks_->wait_ns.load()};
}

std::string model_signature(const nn::Module& model) {
  std::string s;
  for (const nn::NamedTensor& p : model.named_parameters()) s += describe_tensor(p.name, p.tensor) + "\n";
  for (const nn::NamedTensor& b : model.named_buffers()) s += describe_tensor(b.name, b.tensor) + " (buffer)\n";
  return s;
}

void replicate_in_place(ProcessGroup& group, nn::Module& model) {
  const std::vector<std::string> all = group.all_gather(model_signature(model));
  for (int r = 1; r < group.world_size(); ++r)
    if (all[static_cast<std::size_t>(r)] != all[0])
      throw Error("dist.replicate", first_difference(all[0], all[static_cast<std::size_t>(r)], r));
  if (group.world_size() == 1) return;

  // One broadcast of every value, packed: rank 0's bytes land in the same places on every rank.
  std::vector<nn::NamedTensor> state = model.named_parameters();
  for (nn::NamedTensor& b : model.named_buffers()) state.push_back(std::move(b));
  std::vector<std::size_t> offsets;
  std::vector<std::byte> packed;
  for (const nn::NamedTensor& t : state) {
    const std::vector<std::byte> bytes = to_bytes(t.tensor).get();
    offsets.push_back(packed.size());
    packed.insert(packed.end(), bytes.begin(), bytes.end());
  }
  offsets.push_back(packed.size());
  const auto timeout = group.timeout();
  group.submit([&](Collective& c) { c.broadcast(packed.data(), packed.size(), 0, timeout); }).get();

  std::map<std::string, Tensor> values;
  for (std::size_t i = 0; i < state.size(); ++i) {
    auto bytes = std::make_shared<std::vector<std::byte>>(packed.begin() + static_cast<std::ptrdiff_t>(offsets[i]),
                                                          packed.begin() + static_cast<std::ptrdiff_t>(offsets[i + 1]));
    const Tensor& t = state[i].tensor;
    values[state[i].name] = from_bytes(std::move(bytes), t.shape(), t.dtype(), t.device());
  }
  model.map_parameters_in_place([&](const std::string& path, const Tensor&) { return values.at(path); });
  model.map_buffers_in_place([&](const std::string& path, const Tensor&) { return values.at(path); });
  logger().debug("dist: rank {} holds rank 0's {} tensors ({} bytes)", group.rank(), state.size(), packed.size());
}

GradientReducer::GradientReducer(ProcessGroup& group, const nn::Module& model, GradientReducerOptions options)
    : group_(group) {
  const std::vector<nn::NamedTensor> params = model.named_parameters(true);
  for (const nn::NamedTensor& p : params) {
    KILN_CHECK(p.tensor.dtype() == DType::f32, "dist.GradientReducer",
               "averages f32 gradients; parameter " + describe_tensor(p.name, p.tensor) + " is not f32");
    shapes_.push_back(p.tensor.shape());
  }
  // Reverse order: backward reports the last layers' gradients first.
  bucket_of_.resize(params.size());
  std::size_t bytes = 0;
  for (std::size_t k = params.size(); k-- > 0;) {
    const std::size_t n = static_cast<std::size_t>(params[k].tensor.numel());
    const std::size_t cap =
        buckets_.size() <= 1 ? std::min(options.first_bucket_bytes, options.bucket_bytes) : options.bucket_bytes;
    if (buckets_.empty() || (bytes > 0 && bytes + 4 * n > cap)) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().params.push_back(k);
    buckets_.back().elements += n;
    bucket_of_[k] = buckets_.size() - 1;
    bytes += 4 * n;
  }
}

Gradients GradientReducer::backward(const nn::Module& model, const Tensor& loss) {
  const std::vector<Tensor> params = model.parameters(true);
  KILN_CHECK(params.size() == shapes_.size(), "dist.GradientReducer",
             "the model has " + std::to_string(params.size()) + " trainable parameters, the reducer was made for " +
                 std::to_string(shapes_.size()));
  std::unordered_map<EntityId, std::size_t> index;
  for (std::size_t k = 0; k < params.size(); ++k) {
    KILN_CHECK(params[k].shape() == shapes_[k], "dist.GradientReducer",
               "parameter #" + std::to_string(k) + " is " + params[k].shape().str() + ", the reducer was made for " +
                   shapes_[k].str());
    index[params[k].id()] = k;
  }

  // Per step: each parameter's gradient once reported, each bucket's count of reported ones and
  // its averaged values once reduced.
  struct Step {
    std::vector<Tensor> grads;
    std::vector<std::size_t> ready;
    std::vector<std::vector<float>> reduced;
    std::vector<std::future<void>> done;
    std::size_t next = 0;  // buckets launch in order, the same on every rank
  };
  auto step = std::make_shared<Step>();
  step->grads.resize(params.size());
  step->ready.assign(buckets_.size(), 0);
  step->reduced.resize(buckets_.size());
  const auto timeout = group_.timeout();
  const float world = static_cast<float>(group_.world_size());

  auto launch_ready = [&] {
    while (step->next < buckets_.size() && step->ready[step->next] == buckets_[step->next].params.size()) {
      const std::size_t b = step->next++;
      std::vector<Tensor> grads;
      for (std::size_t k : buckets_[b].params) grads.push_back(step->grads[k]);
      const std::size_t elements = buckets_[b].elements;
      // Runs on the communication thread: waits for the gradients' values (backward goes on
      // meanwhile), then sums them over the ranks. Each gradient is read on its own (read_bucket;
      // one cat kernel for the bucket ended the overlap with backward: 4 processes took 17.0 s an
      // epoch instead of 13.5).
      step->done.push_back(group_.submit([step, b, grads = std::move(grads), elements, timeout, world,
                                          clocks = clocks_](Collective& c) {
        std::vector<float>& flat = step->reduced[b];
        flat.resize(elements);
        const auto t0 = std::chrono::steady_clock::now();
        read_bucket(grads, flat);
        const auto t1 = std::chrono::steady_clock::now();
        c.all_reduce(flat.data(), flat.size(), Element::f32, ReduceOp::sum, timeout);
        const auto t2 = std::chrono::steady_clock::now();
        for (float& x : flat) x /= world;
        clocks->read_ns.fetch_add(nanoseconds(t1 - t0), std::memory_order_relaxed);
        clocks->all_reduce_ns.fetch_add(nanoseconds(t2 - t1), std::memory_order_relaxed);
      }));
    }
  };
  auto on_ready = [&](EntityId leaf, const Tensor& grad) {
    const auto it = index.find(leaf);
    if (it == index.end()) return;  // an input that requires gradients, not a parameter
    step->grads[it->second] = grad;
    ++step->ready[bucket_of_[it->second]];
    launch_ready();
  };
  const Gradients local = kiln::backward(loss, on_ready);
  started_early_ = step->next;
  // Parameters that took no part: zeros, so that every bucket completes on every rank.
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (step->grads[k].defined()) continue;
    step->grads[k] = zeros(params[k].shape(), {DType::f32, params[k].device()});
    ++step->ready[bucket_of_[k]];
  }
  launch_ready();
  const auto waiting = std::chrono::steady_clock::now();
  for (std::future<void>& f : step->done) f.get();
  clocks_->wait_ns.fetch_add(nanoseconds(std::chrono::steady_clock::now() - waiting), std::memory_order_relaxed);
  clocks_->steps.fetch_add(1, std::memory_order_relaxed);

  // Each bucket goes back to the device in one upload (taken over without a copy on the CPU) and
  // is cut into its parameters' gradients there.
  Gradients out;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const Device device = params[buckets_[b].params.front()].device();
    const auto elements = static_cast<std::int64_t>(step->reduced[b].size());
    const Tensor flat = from_vector(std::move(step->reduced[b]), Shape{elements}, device);
    std::int64_t at = 0;
    for (std::size_t k : buckets_[b].params) {
      const std::int64_t n = params[k].numel();
      Tensor part = buckets_[b].params.size() == 1 ? flat : narrow(flat, 0, at, n);
      out.set(params[k], reshape(std::move(part), params[k].shape().to_vector()));
      at += n;
    }
  }
  return out;
}

}  // namespace kiln::dist
