// A function of several tensors recorded once and run after that as one message, as CUDA graphs
// replay recorded work: no shape rules, handles or queue pushes per op, and a plan made once, at
// the first replay. RecordedPass (a served model's forward pass) and optim::RecordedStep (a whole
// training step: forward, backward and the optimizer's update) are built on it.
//
//   auto f = RecordedFunction::record(
//       [](std::vector<Tensor>& in, RecordedFunction::Recording& rec) {
//         Tensor lr = rec.host_input({});               // a number each call brings
//         Tensor w = std::move(in[1]);                  // handed to its last op: in place
//         return std::vector<Tensor>{std::move(w) - in[0] * lr};
//       },
//       {{{3}}, {{3}}});
//   std::vector<Tensor> in;                         // (a braced list would copy w: not handed over)
//   in.push_back(grad);
//   in.push_back(std::move(w));
//   w = f(std::move(in), RecordedFunction::f32_values({0.1}))[0];
//
// Inputs. The function gets stand-ins of the inputs, which each call's tensors replace. An input
// the caller hands over (std::move, its last handle) lends its buffer to the replay, so the op
// the function handed the stand-in to (its last handle too) writes in place, as it would
// outside; an input the caller keeps is only read. Host inputs are values that change from call
// to call without being tensors of the caller (a learning rate, a bias correction): each call's
// message carries their bytes, so they are not constants of the recording.
//
// What a function may do: any ops on one device, on its inputs and on tensors from outside it
// (read again at every call), gradients included unless Options::gradients is off (backward's
// ops are ops; its graph must die inside the call). What it may not, each a kiln::Error from
// record(): read values or sync (nothing runs while recording), keep a tensor it made or a
// stand-in beyond the call, return a tensor from outside, use another device. Random ops draw
// the same values at every call, unless they were submitted under a RedrawnSeeds (below). Record
// runs nothing: kernels compile at the first call.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine/creation.h"
#include "kiln/engine/tensor.h"

namespace kiln {

struct RecordedGraph;  // engine/recorded_graph.h

namespace detail {
struct PassRecorder;
}

struct RecordingOptions {
  std::string name = "recorded function";              // what the calls' errors name
  std::string record_name = "RecordedFunction::record";  // ... and record()'s
  bool gradients = true;  // false: an op that would record a gradient is an error
};

class RecordedFunction {
 public:
  struct Spec {
    Shape shape;
    DType dtype = DType::f32;
  };

  // What the function being recorded may ask of its recording.
  class Recording {
   public:
    // A tensor whose values each call brings in its message (operator()'s host_values, in the
    // order asked for here).
    Tensor host_input(const Shape& shape, DType dtype = DType::f32);

   private:
    friend class RecordedFunction;
    explicit Recording(detail::PassRecorder& r) : recorder_(r) {}
    detail::PassRecorder& recorder_;
  };

  using Function = std::function<std::vector<Tensor>(std::vector<Tensor>& inputs, Recording& recording)>;

  // Records fn on stand-ins of `inputs` (the function may move them out of the vector), without
  // running anything. Its results are the recording's outputs: tensors it made, or its inputs.
  static RecordedFunction record(const Function& fn, const std::vector<Spec>& inputs, Device device = Device::cpu(),
                                 RecordingOptions options = {});

  // The recording on `inputs` (of the recorded shapes, dtypes and device), submitted as one
  // message; from any thread, as an op is. `host_values`: the host inputs' bytes, one after the
  // other (host_bytes() of them).
  std::vector<Tensor> operator()(std::vector<Tensor> inputs, std::vector<std::byte> host_values = {}) const;

  // Host values of f32 host inputs, rounded as a scalar operand of an f32 op rounds them.
  static std::vector<std::byte> f32_values(const std::vector<double>& values);

  const std::vector<Spec>& inputs() const { return inputs_; }
  const std::vector<Spec>& outputs() const { return outputs_; }
  std::size_t host_bytes() const { return host_bytes_; }
  Device device() const { return device_; }
  // Messages the recording holds (ops and the drops between them).
  std::size_t size() const;
  const std::string& name() const { return name_; }
  // The recording as a graph of ops, read-only (engine/recorded_graph.h): to write it elsewhere.
  RecordedGraph graph() const;
  // Random ops that draw the values they were recorded with at every call (outside any
  // RedrawnSeeds), and the first of them ("rand_normal f32[4, 8]"), for callers that refuse them.
  std::size_t fixed_random_ops() const { return fixed_random_ops_; }
  const std::string& first_fixed_random_op() const { return first_fixed_random_op_; }

 private:
  struct SeedSource {  // a RedrawnSeeds of the recording, and how many random ops it covered
    std::function<Generator()> make;
    std::size_t ops = 0;
  };
  RecordedFunction() = default;
  std::shared_ptr<RecordedOps> ops_;
  std::vector<SeedSource> seed_sources_;
  std::size_t fixed_random_ops_ = 0;
  std::string first_fixed_random_op_;
  std::vector<Spec> inputs_, outputs_;
  std::size_t host_bytes_ = 0;
  Device device_;
  std::string name_;
};

// While one lives on a thread that records (RecordedFunction), the random ops submitted there
// draw new seeds at every call of the recording: just before each call, `make()` gives a
// generator, and each of those ops, in the order they were submitted, takes its next draw, as
// the code that submitted them draws from the generator it makes itself. Dropout uses it, so a
// replayed training step draws the mask an eager step would. Outside a recording it does nothing.
//
//   const std::uint64_t call = calls->fetch_add(1);
//   const RedrawnSeeds redrawn([=] { return Generator(seed ^ calls->fetch_add(1)); });
//   Generator gen(seed ^ call);
//   Tensor mask = bernoulli(shape, p, gen);
class RedrawnSeeds {
 public:
  explicit RedrawnSeeds(std::function<Generator()> make);
  ~RedrawnSeeds();
  RedrawnSeeds(const RedrawnSeeds&) = delete;
  RedrawnSeeds& operator=(const RedrawnSeeds&) = delete;

 private:
  detail::PassRecorder* recorder_ = nullptr;
};

}  // namespace kiln
