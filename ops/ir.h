// The op message: plain data that names an operation, its input and output entities and its
// attributes. User threads build one per op and push it onto a device stream; the scheduler
// and devices only ever read it. Nothing here knows about devices, memory or threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "kiln/ops/dtype.h"
#include "kiln/ops/shape.h"
#include "kiln/ops/small_vector.h"

namespace kiln {

enum class OpKind : std::uint16_t {
#define KILN_OP(name, family) name,
#include "kiln/ops/op_list.def"
#undef KILN_OP
  count_
};
inline constexpr std::size_t kOpCount = static_cast<std::size_t>(OpKind::count_);

using EntityId = std::uint64_t;

// How an op may use an input: ReadWrite means the caller handed over its last reference, so
// the op may write its output into that input's buffer. Outputs are NotInit.
enum class TensorStatus : std::uint8_t { ReadOnly, ReadWrite, NotInit };

struct TensorIr {
  EntityId id = 0;
  Shape shape;
  DType dtype = DType::f32;
  TensorStatus status = TensorStatus::NotInit;
  std::int64_t numel() const { return shape.numel(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }
};

// Where a scalar operand of a binary op sits: `x + 2` is Rhs, `2 - x` is Lhs.
enum class ScalarSide : std::uint8_t { None, Rhs, Lhs };

// Attributes; each op documents in ops/op_list.def which fields it reads.
struct OpAttrs {
  std::vector<std::int64_t> ints;
  double scalar = 0.0;
  double scalar2 = 0.0;
  std::int64_t dim = 0;
  bool keepdim = false;
  bool flag = false;
  DType dtype = DType::f32;
  ScalarSide scalar_side = ScalarSide::None;
  std::uint64_t seed = 0;
};

// Receives the result of a read or sync message on the scheduler's thread.
class Completion {
 public:
  virtual ~Completion() = default;
  virtual void complete(const std::byte* data, std::size_t bytes) = 0;
  virtual void fail(std::exception_ptr error) = 0;
  // Where a read's bytes may go directly: a completion that keeps the value in memory of its own
  // (to_vector's vector) returns it, the device copies the value there and complete_in_place()
  // follows; nullptr (the default): the bytes are staged and complete() copies them. One copy
  // instead of two, and no staging buffer whose fresh pages fault in: reading a 1.6 MB gradient
  // took 2 ms on a 2-core VM, most of it page faults and zero-filling.
  virtual std::byte* destination(std::size_t bytes) { return nullptr; }
  virtual void complete_in_place() {}
  // A read for kiln::to between devices that share memory (streams of one GPU) takes the value's
  // buffer itself, once the device has finished writing it, instead of its bytes. The buffer is
  // opaque at this level (the executor hands over its kiln::Buffer).
  virtual bool takes_buffer() const { return false; }
  virtual void complete_buffer(std::shared_ptr<void>) {}
};

// The bytes of an upload that another device is still producing (kiln::to): wait() blocks
// until they exist, or throws the producer's error.
class PendingHostData {
 public:
  virtual ~PendingHostData() = default;
  virtual std::shared_ptr<const std::vector<std::byte>> wait() const = 0;
};

// The buffer of an upload from another device of the same memory (Completion::takes_buffer):
// wait() blocks until the producer hands it over, or throws the producer's error.
class PendingBuffer {
 public:
  virtual ~PendingBuffer() = default;
  virtual std::shared_ptr<void> wait() const = 0;
};

// The tensors of a message: inline up to two (almost every op), so building one allocates nothing.
using TensorList = SmallVector<TensorIr, 2>;

struct RecordedOps;  // below

struct OpIr {
  OpKind kind = OpKind::sync;
  std::uint64_t seq = 0;  // position in its stream, set at submission
  std::uint32_t lane = 0;  // the submitting thread's number (Stream::submit), to see independent work
  TensorList inputs;
  TensorList outputs;
  OpAttrs attrs;
  // upload: the first of outputs[0].bytes() bytes, kept alive by whatever holds them (the
  // caller's own vector, moved in: no copy into a byte vector of its own); replay: the values of
  // the pass's host inputs (RecordedOps::host_inputs)
  std::shared_ptr<const std::byte> host_data;
  std::shared_ptr<const PendingHostData> pending_data;       // upload from another device
  std::shared_ptr<const PendingBuffer> pending_buffer;       // ... of the same memory
  std::shared_ptr<Completion> completion;                   // read, sync
  std::shared_ptr<RecordedOps> recorded;                    // replay
};

// A function recorded once (engine/recorded_function.h: a forward pass, a training step) that a
// replay message runs as one step: its messages as they were submitted while recording, and the
// entities a replay puts its own in place of. Every replay of a pass uses the same entities
// inside: the executor runs a replay's steps one after another, so one replay's entities are
// gone before the next starts.
struct RecordedOps {
  std::vector<OpIr> ops;
  // The stand-ins of the replay message's inputs, in order: each replay's tensors take their place.
  std::vector<EntityId> inputs;
  // Stand-ins whose values the replay message carries as bytes (its host_data, one after the other
  // in this order): numbers that change from replay to replay (a learning rate).
  std::vector<TensorIr> host_inputs;
  // What the replay hands to the message's outputs, in order (an entity may come twice, or be an input's).
  std::vector<EntityId> outputs;
  // Random ops (by their output) whose seeds each replay brings: 8 bytes each, in this order,
  // after the host inputs' values in the message's host_data.
  std::vector<EntityId> reseeded;
  // The entities from outside the pass that its messages read (weights), kept alive while a
  // replay may still run: type-erased handles, as ops/ knows no tensors.
  std::vector<std::shared_ptr<void>> outside;
  // The executor's plan of `ops`, made at the first replay and used only by the executor of the
  // pass's device (one thread at a time); type-erased, as ops/ knows no plans.
  std::shared_ptr<void> plan;
};

}  // namespace kiln
