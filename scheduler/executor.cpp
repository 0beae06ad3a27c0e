#include "kiln/scheduler/executor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>

#include "kiln/base/log.h"
#include "kiln/base/trace.h"
#include "kiln/ops/decompositions.h"
#include "kiln/ops/elementwise_rules.h"
#include "kiln/ops/registry.h"
#include "kiln/streams/runtime_settings.h"

namespace kiln {

namespace {

// A fused group's place in the stream, for ordering its failure among others: its last member,
// which comes after every op whose values it reads.
std::uint64_t group_seq(const FusedGroup& group, std::span<const OpIr> batch) {
  std::uint64_t seq = 0;
  for (std::uint32_t m : group.members) seq = std::max(seq, batch[m].seq);
  return seq;
}

// The checks output `o` carries: the op's own as well (`failing`) where its deferred check
// reaches that output (`reached`, as DeferredCheck::outputs; 0 without a check), else only its
// inputs'.
const Checks& output_checks(std::size_t o, std::uint64_t reached, const Checks& failing, const Checks& inputs) {
  const bool reaches = reached != 0 && (o >= 64 || (reached >> o & 1u));
  return reaches ? failing : inputs;
}

// What a fused kernel's failure is called: "fused relu chain".
std::string fused_chain_name(const FusedExpr& expr) {
  const FusedAnchor* a = expr.anchored();
  return std::string("fused ") + op_name(a ? a->op.kind : expr.nodes[0].kind) + " chain";
}

// Output bytes of the deferred kernels at most before they run: each holds its buffers until it
// has run, so this bounds the memory a stretch of overlapped work holds beyond what running it in
// order would. Large enough that a stretch holds every thread's whole step of a small model (a
// bound of 64 kernels cut four threads' gradients into stretches of two threads each).
constexpr std::size_t kMaxDeferredBytes = std::size_t{256} << 20;

// Ops that run on the executor's thread and need every kernel before them done: reads and syncs
// look at values, an upload may wait for another device, and a recorded pass runs its steps in
// order (run_recorded).
bool waits_for_kernels(const OpIr& op) {
  return op.kind == OpKind::read || op.kind == OpKind::sync || op.kind == OpKind::upload || op.kind == OpKind::replay;
}

}  // namespace

Executor::Executor(DeviceBackend& device) : device_(device) { slots_.reserve(1024); }
Executor::~Executor() = default;

bool Executor::overlap_batch(std::span<const OpIr> ops) const {
  if (!device_.info().concurrent_kernels || !RuntimeSettings::get().overlap.load(std::memory_order_relaxed))
    return false;
  // Only the threads that submit kernels count: drops and reads come from whichever thread lets
  // go of a handle or waits, and uploads from the threads that hand work to another (a server's
  // clients, whose requests one thread then runs as a batch).
  const OpIr* first = nullptr;
  for (const OpIr& op : ops) {
    if (op.kind == OpKind::drop || op.kind == OpKind::read || op.kind == OpKind::sync || op.kind == OpKind::upload)
      continue;
    if (!first)
      first = &op;
    else if (op.lane != first->lane)
      return true;
  }
  return false;
}

AsyncKernel& Executor::defer_kernel(const char* name, std::span<Slot* const> inputs, std::span<const BufferPtr> outputs,
                                    std::function<void()> run) {
  AsyncKernel& k = async_.add();
  k.name = name;
  k.run = std::move(run);
  for (Slot* s : inputs) {
    k.buffers.push_back(s->buffer);
    if (s->producer && std::find(k.after.begin(), k.after.end(), s->producer) == k.after.end())
      k.after.push_back(s->producer);
  }
  for (const BufferPtr& b : outputs) async_.hold_output(k, b);
  async_.start(k);
  return k;
}

void Executor::run_deferred() {
  if (async_.empty()) return;
  async_.finish([this](AsyncKernel& k) {
    counters_.overlapped_kernels.fetch_add(1, std::memory_order_relaxed);
    if (k.error) counters_.ops_failed.fetch_add(1, std::memory_order_relaxed);
    for (EntityId id : k.outputs) {
      Slot* s = find(id);
      if (!s || s->producer != &k) continue;  // dropped or taken over since
      if (k.error)
        *s = Slot{nullptr, k.error, nullptr};
      else
        s->producer = nullptr;
    }
  });
}

Executor::Slot* Executor::find(EntityId id) {
  auto it = slots_.find(id);
  return it == slots_.end() ? nullptr : &it->second;
}

std::span<OpIr> Executor::native_ops(std::span<OpIr> ops, std::vector<OpIr>& into) {
  const DeviceCapabilities& caps = device_.capabilities();
  std::size_t first = 0;
  while (first < ops.size() && caps.runs(ops[first])) ++first;
  if (first == ops.size()) return ops;
  // Moved: the caller drops the originals once the batch has run.
  into.assign(std::make_move_iterator(ops.begin()),
              std::make_move_iterator(ops.begin() + static_cast<std::ptrdiff_t>(first)));
  for (std::size_t i = first; i < ops.size(); ++i) {
    if (caps.runs(ops[i]))
      into.push_back(std::move(ops[i]));
    else
      decompose_into(ops[i], into, 0);
  }
  return into;
}

// A rule's messages may need rules of their own (a conv_input_grad's transposed matmul on a
// device that reads no transposed operand): applied again, a few levels deep at most. An op
// that no rule rewrites stays as it is, and fails with the device's own error when it runs.
void Executor::decompose_into(const OpIr& op, std::vector<OpIr>& into, int depth) {
  std::vector<OpIr> parts;
  const char* rule = depth < 4 ? decompose(op, next_internal_id_, parts) : nullptr;
  if (!rule) {
    into.push_back(op);
    return;
  }
  counters_.ops_decomposed.fetch_add(1, std::memory_order_relaxed);
  if (log_enabled(spdlog::level::debug))
    logger().debug("{}: {} (seq {}) decomposed by rule {} into {} messages", device_.info().name, op_name(op.kind),
                   op.seq, rule, parts.size());
  for (OpIr& part : parts) {
    if (device_.capabilities().runs(part))
      into.push_back(std::move(part));
    else
      decompose_into(part, into, depth + 1);
  }
}

void Executor::run_batch(std::span<OpIr> batch) {
  const trace::Span span("batch", "scheduler");
  counters_.batches.fetch_add(1, std::memory_order_relaxed);
  // Ops the device lacks become ops it has before the batch is planned (ops/decompositions.h).
  const std::span<OpIr> ops = native_ops(batch, decomposed_);
  struct Release {  // the copies hold the messages' payloads (completions, host data)
    std::vector<OpIr>& v;
    ~Release() { v.clear(); }
  } release{decomposed_};
  bool replayed = false;
  Plan& plan = plans_.plan(ops, RuntimeSettings::get().fusion.load(std::memory_order_relaxed), planner_, replayed);
  if (replayed) counters_.plans_replayed.fetch_add(1, std::memory_order_relaxed);
  if (!replayed && device_.compiles_kernels()) precompile(plan, ops);
  overlapping_ = overlap_batch(ops);
  if (log_enabled(spdlog::level::debug))
    logger().debug("{}: batch of {} messages -> {} steps ({} fused){}{}", device_.info().name, ops.size(),
                   plan.steps.size(), plan.groups.size(), replayed ? ", recorded plan" : "",
                   overlapping_ ? ", kernels overlapped" : "");
  try {
    for (const PlanStep& step : plan.steps) {
      if (overlapping_ &&
          (async_.output_bytes() >= kMaxDeferredBytes || (!step.fused && waits_for_kernels(ops[step.index]))))
        run_deferred();
      if (step.fused)
        run_fused(plan.groups[step.index], ops);
      else
        run_one(ops[step.index]);
    }
    run_deferred();
  } catch (...) {
    run_deferred();  // the tasks read the batch's messages
    overlapping_ = false;
    throw;
  }
  overlapping_ = false;
  try {
    device_.flush();
  } catch (const std::exception& e) {
    // The failure (a lost device) reaches the futures at the next read or sync.
    logger().error("{}: {}", device_.info().name, e.what());
  }
}

void Executor::precompile(Plan& plan, std::span<const OpIr> ops) {
  // Every new plan passes here (an eager step's batches are cut anew each step), so the scan
  // does the work the run would: a group whose kernel is compiled gets it now, and compiled()
  // finds it without building its key again.
  std::vector<FusedExpr> fresh;
  for (FusedGroup& group : plan.groups) {
    if (group.kernel) continue;
    std::string key = group.expr.structure_key();
    if (const auto it = kernel_cache_.find(key); it != kernel_cache_.end()) {
      group.kernel = it->second.get();
      continue;
    }
    if (!group.expr.anchored() && precompiled_.insert(std::move(key)).second) fresh.push_back(group.expr);
  }
  // A plan without a new fused chain is a structure seen before, its batches cut elsewhere: its
  // elementwise ops compiled with it. Only a new one is worth their keys (each op's expression
  // and key built again here, where the run builds them too).
  if (fresh.empty()) return;
  for (const PlanStep& step : plan.steps) {
    if (step.fused || !is_elementwise(ops[step.index].kind)) continue;
    FusedExpr expr = single_op_expr(ops[step.index]);
    if (precompiled_.insert(expr.structure_key()).second) fresh.push_back(std::move(expr));
  }
  // One kernel gains nothing from a compile of its own ahead: it compiles where it runs.
  if (fresh.size() < 2) return;
  if (log_enabled(spdlog::level::debug))
    logger().debug("{}: compiling {} new kernels of the batch at once", device_.info().name, fresh.size());
  try {
    device_.precompile_fused(fresh);
  } catch (const std::exception& e) {
    // A kernel that fails to compile fails again, with its op's name, where it runs.
    if (log_enabled(spdlog::level::debug)) logger().debug("{}: precompiling: {}", device_.info().name, e.what());
  }
  counters_.kernels_precompiled.fetch_add(fresh.size(), std::memory_order_relaxed);
}

const CompiledKernel& Executor::compiled(FusedGroup& group) {
  // A recorded plan's group remembers its kernel: no key to build and look up again.
  if (group.kernel) {
    counters_.plan_cache_hits.fetch_add(1, std::memory_order_relaxed);
    return *group.kernel;
  }
  const CompiledKernel& kernel = compiled(group.expr);
  group.kernel = &kernel;
  return kernel;
}

const CompiledKernel& Executor::compiled(const FusedExpr& expr) {
  std::string key = expr.structure_key();
  auto it = kernel_cache_.find(key);
  if (it != kernel_cache_.end()) {
    counters_.plan_cache_hits.fetch_add(1, std::memory_order_relaxed);
    return *it->second;
  }
  counters_.plan_cache_misses.fetch_add(1, std::memory_order_relaxed);
  if (log_enabled(spdlog::level::debug)) logger().debug("fusion: compiling [{}]", expr.describe());
  auto kernel = device_.compile_fused(expr);
  const CompiledKernel& ref = *kernel;
  kernel_cache_.emplace(std::move(key), std::move(kernel));
  return ref;
}

void Executor::run_fused(FusedGroup& group, std::span<OpIr> batch) {
  const FusedExpr& expr = group.expr;
  auto replay_unfused = [&] {
    for (std::uint32_t m : group.members) run_one(batch[m]);
  };
  // Scratch vectors owned by the executor: a fused run allocates nothing of its own.
  FusedScratch& s = fused_scratch_;
  const FusedArgLayout layout = fused_arg_layout(expr);
  // A plain group's buffers follow its expression; only an anchored one assembles its list.
  std::span<const TensorIr> in_meta = expr.inputs, out_meta = expr.outputs;
  if (expr.anchored()) {
    fused_arg_tensors(expr, s.in_meta, s.out_meta);
    in_meta = s.in_meta;
    out_meta = s.out_meta;
  }
  // An input that failed: run the members one by one, so that exactly the values that depend
  // on the failure fail, as they would without fusion.
  s.in_slots.assign(in_meta.size(), nullptr);
  for (std::size_t i = 0; i < in_meta.size(); ++i) {
    s.in_slots[i] = find(in_meta[i].id);
    if (!s.in_slots[i] || s.in_slots[i]->error) return replay_unfused();
  }
  if (out_meta.empty()) {
    // Every value of the group died inside it: nothing observable is left to compute.
    counters_.ops_run.fetch_add(group.op_count, std::memory_order_relaxed);
    for (EntityId id : group.consumed) slots_.erase(id);
    return;
  }
  s.in.assign(in_meta.size(), nullptr);
  s.out.assign(out_meta.size(), nullptr);
  s.out_buffers.assign(out_meta.size(), nullptr);
  s.lent.assign(in_meta.size(), 0);
  Checks checks;
  for (std::size_t i = 0; i < s.in.size(); ++i) {
    s.in[i] = s.in_slots[i]->buffer.get();
    if (s.in_slots[i]->checks) checks = combine_checks(checks, s.in_slots[i]->checks);
  }
  try {
    for (std::size_t o = 0; o < out_meta.size(); ++o) {
      const TensorIr& meta = out_meta[o];
      // In place: an input read at the output's own index (an epilogue's, not an anchor's or a
      // prologue's) whose entity ends with this group and whose buffer no view shares.
      // Not while kernels run as tasks: a buffer's count falling to one there does not order the
      // reads of the task that let it go before this group's writes.
      for (std::size_t i = 0; !overlapping_ && o < layout.result && i < layout.operands && !s.out_buffers[o]; ++i) {
        const TensorIr& t = in_meta[i];
        // (Element counts, not shapes: every buffer is contiguous, and an epilogue past a reshape
        // writes values of another shape than it reads.)
        if (s.lent[i] || t.dtype != meta.dtype || t.numel() != meta.numel() || meta.bytes() == 0) continue;
        if (std::find(group.consumed.begin(), group.consumed.end(), t.id) == group.consumed.end()) continue;
        if (s.in_slots[i]->buffer.use_count() != 1) continue;
        s.out_buffers[o] = s.in_slots[i]->buffer;
        s.out_buffers[o]->contents_replaced();
        s.lent[i] = 1;
        counters_.inplace_reuses.fetch_add(1, std::memory_order_relaxed);
      }
      if (!s.out_buffers[o]) s.out_buffers[o] = device_.memory().allocate(meta.bytes());
      s.out[o] = s.out_buffers[o].get();
    }
  } catch (const std::exception&) {
    // Out of memory: unfused, each op fails (or succeeds) on its own, with its own name.
    s.out_buffers.clear();
    return replay_unfused();
  }
  counters_.ops_run.fetch_add(group.op_count, std::memory_order_relaxed);
  try {
    const CompiledKernel& kernel = compiled(group);
    if (overlapping_) {
      auto run = [this, &kernel, &expr, ins = s.in, outs = s.out] {
        std::unique_ptr<DeferredCheck> deferred;
        try {
          device_.run_fused(kernel, expr, KernelArgs{ins, outs, &deferred});
        } catch (const Error&) {
          throw;
        } catch (const std::exception& e) {
          throw Error(fused_chain_name(expr), e.what());
        }
        KILN_CHECK(!deferred, "fused chain", "internal error: a deferred check from a device that overlaps kernels");
        counters_.kernels_launched.fetch_add(1, std::memory_order_relaxed);
        counters_.fused_kernels.fetch_add(1, std::memory_order_relaxed);
      };
      AsyncKernel& k = defer_kernel("fused chain", s.in_slots, s.out_buffers, std::move(run));
      counters_.ops_fused.fetch_add(group.op_count, std::memory_order_relaxed);
      for (std::size_t o = 0; o < out_meta.size(); ++o) {
        slots_[out_meta[o].id] = Slot{std::move(s.out_buffers[o]), nullptr, checks, &k};
        k.outputs.push_back(out_meta[o].id);
      }
      s.out_buffers.clear();
      for (EntityId id : group.consumed) slots_.erase(id);
      return;
    }
    std::unique_ptr<DeferredCheck> deferred;
    {
      const trace::Span span("fused chain", "kernel");
      device_.run_fused(kernel, expr,
                        KernelArgs{std::span<Buffer* const>(s.in), std::span<Buffer* const>(s.out), &deferred});
    }
    Checks failing;  // the inputs' checks and the kernel's own, for the outputs it reaches
    std::uint64_t reached = 0;
    if (deferred) {
      reached = deferred->outputs;
      failing = with_own_check(checks, group_seq(group, batch), std::move(deferred), nullptr);
    }
    counters_.kernels_launched.fetch_add(1, std::memory_order_relaxed);
    counters_.fused_kernels.fetch_add(1, std::memory_order_relaxed);
    counters_.ops_fused.fetch_add(group.op_count, std::memory_order_relaxed);
    for (std::size_t o = 0; o < out_meta.size(); ++o)
      slots_[out_meta[o].id] = Slot{std::move(s.out_buffers[o]), nullptr, output_checks(o, reached, failing, checks)};
  } catch (const Error&) {
    fail_outputs(out_meta, std::current_exception());
  } catch (const std::exception& e) {
    fail_outputs(out_meta, std::make_exception_ptr(Error(fused_chain_name(expr), e.what())));
  }
  s.out_buffers.clear();
  for (EntityId id : group.consumed) slots_.erase(id);
}

void Executor::run_one(OpIr& op) {
  counters_.ops_run.fetch_add(1, std::memory_order_relaxed);
  switch (op.kind) {
    case OpKind::drop: slots_.erase(op.inputs[0].id); return;
    case OpKind::read: run_read(op); return;
    case OpKind::replay: run_recorded(op); return;
    case OpKind::sync:
      try {
        // release_cached_memory: here, in stream order, so that no recorded command still uses
        // a block whose memory goes back to the driver.
        if (op.attrs.flag) device_.memory().release_unused();
        device_.synchronize();
        op.completion->complete(nullptr, 0);
      } catch (...) {
        op.completion->fail(std::current_exception());
      }
      return;
    default: run_compute(op);
  }
}

void Executor::run_read(OpIr& op) {
  Slot* slot = find(op.inputs[0].id);
  if (!slot) {
    op.completion->fail(std::make_exception_ptr(Error("read", "unknown tensor (internal error)")));
  } else if (slot->error) {
    op.completion->fail(slot->error);
  } else {
    // The read waits for the device, so the value's deferred checks can be resolved after it;
    // a failed one is what the read reports (also when the read itself failed: an op fed
    // with what a failed op left may raise errors of its own), and it stays with the value.
    std::exception_ptr error;
    const std::size_t bytes = op.inputs[0].bytes();
    const bool hand_over = op.completion->takes_buffer();  // to a device of the same memory
    std::byte* const direct = hand_over ? nullptr : op.completion->destination(bytes);
    std::unique_ptr<std::byte[]> staged;  // when the completion has no memory of its own
    if (!hand_over && !direct) staged = std::make_unique_for_overwrite<std::byte[]>(bytes);
    try {
      if (hand_over)
        device_.synchronize();  // the buffer's writes are done before the other copies it
      else
        device_.read(*slot->buffer, direct ? direct : staged.get(), bytes);
    } catch (...) {
      error = std::current_exception();
    }
    if (slot->checks) {
      if (std::exception_ptr failed = first_failure(*slot->checks)) error = slot->error = failed;
      if (!error) slot->checks.reset();
    }
    if (error)
      op.completion->fail(error);
    else if (hand_over)
      op.completion->complete_buffer(slot->buffer);
    else if (direct)
      op.completion->complete_in_place();
    else
      op.completion->complete(staged.get(), bytes);
  }
  if (op.inputs[0].status == TensorStatus::ReadWrite) slots_.erase(op.inputs[0].id);
}

namespace {

// What the executor keeps in a recorded pass (RecordedOps::plan): the plan of its messages and
// where the random ops whose seeds each replay brings sit among them.
struct RecordedPlan {
  Plan plan;
  std::vector<std::size_t> reseeded;
};

// The messages of pass.reseeded's random ops, found by their outputs (after decomposition).
std::vector<std::size_t> reseeded_ops(const RecordedOps& pass) {
  std::vector<std::size_t> at;
  for (EntityId id : pass.reseeded) {
    std::size_t i = 0;
    while (i < pass.ops.size() && (pass.ops[i].outputs.empty() || pass.ops[i].outputs[0].id != id)) ++i;
    KILN_CHECK(i < pass.ops.size(), "recorded pass",
               "a random op whose seed each replay brings was rewritten (internal error)");
    at.push_back(i);
  }
  return at;
}

}  // namespace

void Executor::run_recorded(OpIr& op) {
  RecordedOps& pass = *op.recorded;
  // The pass's entities are the same at every replay, so its steps run in order, never as
  // tasks: a task of one replay would still hold them when the next replay starts.
  run_deferred();
  const bool overlapping = overlapping_;
  overlapping_ = false;
  struct Restore {
    bool& flag;
    bool value;
    ~Restore() { flag = value; }
  } restore{overlapping_, overlapping};
  // Every entity of the pass, so that none outlives this replay (the next would find it).
  auto erase_pass_entities = [&] {
    for (const OpIr& o : pass.ops)
      for (const TensorIr& t : o.outputs) slots_.erase(t.id);
    for (EntityId id : pass.inputs) slots_.erase(id);
    for (const TensorIr& t : pass.host_inputs) slots_.erase(t.id);
  };
  auto fail = [&](std::exception_ptr error) {
    erase_pass_entities();
    for (const TensorIr& in : op.inputs)
      if (in.status == TensorStatus::ReadWrite) slots_.erase(in.id);
    fail_outputs(op.outputs, std::move(error));
  };

  for (const TensorIr& in : op.inputs) {
    const Slot* s = find(in.id);
    if (!s) return fail(std::make_exception_ptr(Error("recorded pass", "input entity is unknown (internal error)")));
    if (s->error) return fail(s->error);
  }
  // The caller's inputs stand in for the ones recorded. One handed over (ReadWrite) moves in
  // whole, so a step the recording handed the stand-in to may write its buffer in place; one
  // the caller keeps shares its buffer, which no step can then take over (in place needs a
  // buffer of one owner).
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    auto it = slots_.find(op.inputs[i].id);
    Slot in = op.inputs[i].status == TensorStatus::ReadWrite
                  ? std::move(it->second)
                  : Slot{it->second.buffer, nullptr, it->second.checks, nullptr};
    if (op.inputs[i].status == TensorStatus::ReadWrite) slots_.erase(it);
    slots_[pass.inputs[i]] = std::move(in);
  }
  try {
    if (!pass.plan) {
      // Decomposed once, with the plan: every replay runs the same messages.
      std::vector<OpIr> native;
      if (native_ops(pass.ops, native).data() == native.data()) pass.ops = std::move(native);
      auto plan = std::make_shared<RecordedPlan>();
      planner_.plan(pass.ops, RuntimeSettings::get().fusion.load(std::memory_order_relaxed), plan->plan);
      if (device_.compiles_kernels()) precompile(plan->plan, pass.ops);
      plan->reseeded = reseeded_ops(pass);
      pass.plan = std::move(plan);
    }
    const RecordedPlan& recorded = *static_cast<const RecordedPlan*>(pass.plan.get());
    // Host inputs: the message's bytes, one value after the other; then the random ops' seeds
    // (creation ops run unfused, from their own message).
    std::size_t offset = 0;
    for (const TensorIr& h : pass.host_inputs) {
      BufferPtr buffer = device_.memory().allocate(h.bytes());
      device_.write(*buffer, op.host_data.get() + offset, h.bytes());
      offset += h.bytes();
      slots_[h.id] = Slot{std::move(buffer), nullptr, nullptr, nullptr};
    }
    for (std::size_t index : recorded.reseeded) {
      std::memcpy(&pass.ops[index].attrs.seed, op.host_data.get() + offset, sizeof(std::uint64_t));
      offset += sizeof(std::uint64_t);
    }
  } catch (const Error&) {
    return fail(std::current_exception());
  } catch (const std::exception& e) {
    return fail(std::make_exception_ptr(Error("recorded pass", e.what())));
  }
  Plan& plan = static_cast<RecordedPlan*>(pass.plan.get())->plan;
  const trace::Span span("recorded pass", "scheduler");
  try {
    for (const PlanStep& step : plan.steps) {
      if (step.fused)
        run_fused(plan.groups[step.index], pass.ops);
      else
        run_one(pass.ops[step.index]);
    }
  } catch (...) {
    // Out of the ordinary (the steps report their own failures in their outputs).
    return fail(std::current_exception());
  }
  counters_.passes_replayed.fetch_add(1, std::memory_order_relaxed);
  // Each output takes its slot; one named twice, or an input's, is shared.
  for (std::size_t k = 0; k < op.outputs.size(); ++k) {
    const Slot* result = find(pass.outputs[k]);
    Slot value =
        result
            ? Slot{result->buffer, result->error, result->checks, nullptr}
            : Slot{nullptr, std::make_exception_ptr(Error("recorded pass", "the pass left no result (internal error)")),
                   nullptr, nullptr};
    slots_[op.outputs[k].id] = std::move(value);
  }
  for (EntityId id : pass.outputs) slots_.erase(id);
  for (EntityId id : pass.inputs) slots_.erase(id);
  for (const TensorIr& t : pass.host_inputs) slots_.erase(t.id);
}

void Executor::fail_outputs(std::span<const TensorIr> outputs, std::exception_ptr error) {
  counters_.ops_failed.fetch_add(1, std::memory_order_relaxed);
  for (const TensorIr& out : outputs) slots_[out.id] = Slot{nullptr, error, nullptr};
}

void Executor::run_compute(OpIr& op) {
  const OpInfo& info = op_info(op.kind);
  constexpr std::size_t kInline = 8;
  std::array<Buffer*, kInline> in_small{}, out_small{};
  std::vector<Buffer*> in_big, out_big;
  Buffer** in = in_small.data();
  Buffer** out = out_small.data();
  if (op.inputs.size() > kInline) in = (in_big.resize(op.inputs.size()), in_big.data());
  if (op.outputs.size() > kInline) out = (out_big.resize(op.outputs.size()), out_big.data());

  // An op whose input failed fails the same way: every dependent future sees the first error.
  std::array<Slot*, kInline> in_slots_small{};
  std::vector<Slot*> in_slots_big;
  Slot** in_slots = in_slots_small.data();
  Checks checks;   // the inputs' deferred checks, which the outputs inherit
  Checks failing;  // ... with the op's own, for the outputs it reaches (`reached`)
  std::uint64_t reached = 0;
  if (op.inputs.size() > kInline) in_slots = (in_slots_big.resize(op.inputs.size()), in_slots_big.data());
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    Slot* s = find(op.inputs[i].id);
    if (!s) {
      fail_outputs(op.outputs, std::make_exception_ptr(Error(info.name, "input entity is unknown (internal error)")));
      return;
    }
    if (s->error) {
      fail_outputs(op.outputs, s->error);
      for (const TensorIr& t : op.inputs)
        if (t.status == TensorStatus::ReadWrite) slots_.erase(t.id);
      return;
    }
    in_slots[i] = s;
    in[i] = s->buffer.get();
    if (s->checks) checks = combine_checks(checks, s->checks);
  }

  try {
    std::array<BufferPtr, kInline> out_buffers_small;
    std::vector<BufferPtr> out_buffers_big;
    BufferPtr* out_buffers = out_buffers_small.data();
    if (op.outputs.size() > kInline) out_buffers = (out_buffers_big.resize(op.outputs.size()), out_buffers_big.data());

    std::uint32_t donated_mask = 0;  // inputs whose buffer an output took
    for (std::size_t o = 0; o < op.outputs.size(); ++o) {
      const TensorIr& meta = op.outputs[o];
      if (info.view) {
        out_buffers[o] = in_slots[0]->buffer;
      } else {
        // Not while kernels run as tasks: a buffer's count falling to one there does not order
        // the reads of the task that let it go before this op's writes.
        if (info.inplace_ok && !overlapping_) {
          // In place only when the caller handed the input over and no other entity (a view)
          // shares its buffer: then nothing can observe the overwrite.
          for (std::size_t i = 0; i < op.inputs.size() && i < 32; ++i) {
            const TensorIr& t = op.inputs[i];
            if (t.status == TensorStatus::ReadWrite && !(donated_mask >> i & 1u) && t.dtype == meta.dtype &&
                t.shape == meta.shape && in_slots[i]->buffer.use_count() == 1 && meta.bytes() > 0) {
              out_buffers[o] = in_slots[i]->buffer;
              out_buffers[o]->contents_replaced();
              donated_mask |= 1u << i;
              counters_.inplace_reuses.fetch_add(1, std::memory_order_relaxed);
              break;
            }
          }
        }
        if (!out_buffers[o]) out_buffers[o] = device_.memory().allocate(meta.bytes());
      }
      out[o] = out_buffers[o].get();
    }

    // The task that will compute the outputs, where the kernel is deferred; a view's buffer is
    // its input's, computed by the input's task.
    AsyncKernel* producer = info.view ? in_slots[0]->producer : nullptr;
    if (!info.view) {
      if (op.kind == OpKind::upload) {
        // From another device: wait for the bytes, or for the buffer of a device of the same
        // memory (see kiln::to for why this cannot deadlock).
        if (op.pending_buffer) {
          std::shared_ptr<void> src = op.pending_buffer->wait();
          const Buffer& b = *static_cast<const Buffer*>(src.get());
          device_.copy_from_peer(b, *out[0], op.outputs[0].bytes(), std::move(src));
          counters_.peer_copies.fetch_add(1, std::memory_order_relaxed);
        } else {
          if (op.pending_data) {
            std::shared_ptr<const std::vector<std::byte>> bytes = op.pending_data->wait();
            op.host_data = std::shared_ptr<const std::byte>(bytes, bytes->data());
          }
          device_.write(*out[0], op.host_data.get(), op.outputs[0].bytes());
        }
      } else if (overlapping_) {
        auto run = [this, &op, ins = std::vector<Buffer*>(in, in + op.inputs.size()),
                    outs = std::vector<Buffer*>(out, out + op.outputs.size())] {
          std::unique_ptr<DeferredCheck> deferred;
          device_.run(op, KernelArgs{ins, outs, &deferred});
          KILN_CHECK(!deferred, op_name(op.kind),
                     "internal error: a deferred check from a device that overlaps kernels");
          counters_.kernels_launched.fetch_add(1, std::memory_order_relaxed);
        };
        producer = &defer_kernel(info.name, std::span<Slot* const>(in_slots, op.inputs.size()),
                                 std::span<const BufferPtr>(out_buffers, op.outputs.size()), std::move(run));
      } else {
        std::unique_ptr<DeferredCheck> deferred;
        const KernelArgs args{std::span<Buffer* const>(in, op.inputs.size()),
                              std::span<Buffer* const>(out, op.outputs.size()), &deferred};
        {
          const trace::Span span(info.name, "kernel");
          device_.run(op, args);
        }
        counters_.kernels_launched.fetch_add(1, std::memory_order_relaxed);
        if (deferred) {
          const int k = deferred->keep_input;
          BufferPtr kept = k >= 0 && static_cast<std::size_t>(k) < op.inputs.size() ? in_slots[k]->buffer : nullptr;
          reached = deferred->outputs;
          failing = with_own_check(checks, op.seq, std::move(deferred), std::move(kept));
        }
      }
    }
    for (std::size_t o = 0; o < op.outputs.size(); ++o) {
      slots_[op.outputs[o].id] =
          Slot{std::move(out_buffers[o]), nullptr, output_checks(o, reached, failing, checks), producer};
      if (producer) producer->outputs.push_back(op.outputs[o].id);
    }
  } catch (const Error&) {
    fail_outputs(op.outputs, std::current_exception());
  } catch (const std::exception& e) {
    // Device-level failures (out of memory, device lost) gain the op's name on their way out.
    fail_outputs(op.outputs, std::make_exception_ptr(Error(info.name, e.what())));
  }
  // Handed-over inputs end their life with this op.
  for (const TensorIr& t : op.inputs)
    if (t.status == TensorStatus::ReadWrite) slots_.erase(t.id);
  if (log_enabled(spdlog::level::trace)) logger().trace("ran {} (seq {})", info.name, op.seq);
}

}  // namespace kiln
