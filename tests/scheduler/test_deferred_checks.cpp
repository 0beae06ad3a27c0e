// Deferred checks in the executor (devices/device.h DeferredCheck), with a device that defers
// what the CPU device checks at once: its gather runs the CPU kernel and hands back a check
// that reports the kernel's error only when resolved, as a GPU's range flag does. Runs the
// executor directly on op messages, so the sanitizer jobs (CPU only) cover it.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "kiln/base/error.h"
#include "kiln/ops/registry.h"
#include "kiln/scheduler/executor.h"

namespace kiln {
namespace {

class DeferringDevice final : public DeviceBackend {
 public:
  int resolved = 0;     // checks resolved so far
  int live_checks = 0;  // checks not yet destroyed

  const DeviceInfo& info() const override { return cpu_->info(); }
  MemoryPool& memory() override { return cpu_->memory(); }
  void write(Buffer& dst, const void* src, std::size_t bytes) override { cpu_->write(dst, src, bytes); }
  void read(const Buffer& src, void* dst, std::size_t bytes) override { cpu_->read(src, dst, bytes); }
  std::shared_ptr<CompiledKernel> compile_fused(const FusedExpr& e) override { return cpu_->compile_fused(e); }
  // A fused kernel of two or more outputs "fails" in its first output only, found late.
  bool fail_first_fused_output = false;
  void run_fused(const CompiledKernel& k, const FusedExpr& e, const KernelArgs& a) override {
    cpu_->run_fused(k, e, KernelArgs{a.inputs, a.outputs});
    if (!fail_first_fused_output || e.outputs.size() < 2 || !a.deferred) return;
    auto check = std::make_unique<Check>(*this, std::make_exception_ptr(Error("remainder", "late failure")), nullptr);
    check->outputs = 1;
    *a.deferred = std::move(check);
  }
  void synchronize() override { cpu_->synchronize(); }
  void run(const OpIr& op, const KernelArgs& args) override {
    if (op.kind != OpKind::gather || !args.deferred) return cpu_->run(op, args);
    std::exception_ptr error;
    try {
      cpu_->run(op, KernelArgs{args.inputs, args.outputs});
    } catch (...) {
      error = std::current_exception();
    }
    auto check = std::make_unique<Check>(*this, error, args.inputs[1]);
    check->keep_input = 1;
    *args.deferred = std::move(check);
  }

 private:
  class Check final : public DeferredCheck {
   public:
    Check(DeferringDevice& d, std::exception_ptr e, const Buffer* index)
        : d_(d), e_(std::move(e)), index_(index), saved_(index ? index->bytes() : 0) {
      ++d_.live_checks;
      if (index) std::memcpy(saved_.data(), index->data(), saved_.size());
    }
    ~Check() override { --d_.live_checks; }
    std::exception_ptr resolve() override {
      ++d_.resolved;
      // The executor kept the index buffer (its entity was dropped) and nothing wrote it.
      if (index_) {
        EXPECT_EQ(std::memcmp(index_->data(), saved_.data(), saved_.size()), 0);
      }
      return e_;
    }

   private:
    DeferringDevice& d_;
    std::exception_ptr e_;
    const Buffer* index_;
    std::vector<std::byte> saved_;
  };
  std::unique_ptr<DeviceBackend> cpu_ = make_cpu_device();
};

class Reader final : public Completion {
 public:
  std::vector<float> values;
  std::exception_ptr error;
  bool done = false;
  void complete(const std::byte* data, std::size_t bytes) override {
    values.resize(bytes / sizeof(float));
    if (bytes) std::memcpy(values.data(), data, bytes);
    done = true;
  }
  void fail(std::exception_ptr e) override {
    error = std::move(e);
    done = true;
  }
  std::string message() const {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
};

// Builds op messages the way engine/ does, with entity ids of its own.
class Messages {
 public:
  std::vector<OpIr> batch;

  EntityId upload_f32(std::vector<float> v) {
    return upload(bytes_of(v), Shape{static_cast<std::int64_t>(v.size())}, DType::f32);
  }
  EntityId upload_i64(std::vector<std::int64_t> v) {
    return upload(bytes_of(v), Shape{static_cast<std::int64_t>(v.size())}, DType::i64);
  }
  EntityId gather(EntityId x, EntityId index) {
    OpIr op = make(OpKind::gather, {x, index});
    op.attrs.dim = 0;
    return push(std::move(op));
  }
  EntityId add_scalar(EntityId x, double s) { return scalar_op(OpKind::add, x, s); }
  EntityId scalar_op(OpKind kind, EntityId x, double s) {
    OpIr op = make(kind, {x});
    op.attrs.scalar = s;
    op.attrs.scalar_side = ScalarSide::Rhs;
    return push(std::move(op));
  }
  void drop(EntityId x) {
    OpIr op;
    op.kind = OpKind::drop;
    op.seq = ++seq_;
    op.inputs.push_back(meta_.at(x));
    batch.push_back(std::move(op));
  }
  std::shared_ptr<Reader> read(EntityId x) {
    OpIr op;
    op.kind = OpKind::read;
    op.seq = ++seq_;
    op.inputs.push_back(meta_.at(x));
    auto r = std::make_shared<Reader>();
    op.completion = r;
    batch.push_back(std::move(op));
    return r;
  }

 private:
  template <class T>
  static std::shared_ptr<const std::vector<std::byte>> bytes_of(const std::vector<T>& v) {
    auto b = std::make_shared<std::vector<std::byte>>(v.size() * sizeof(T));
    std::memcpy(b->data(), v.data(), b->size());
    return b;
  }
  EntityId upload(std::shared_ptr<const std::vector<std::byte>> bytes, Shape shape, DType t) {
    OpIr op;
    op.kind = OpKind::upload;
    op.seq = ++seq_;
    op.outputs.push_back(TensorIr{++id_, shape, t, TensorStatus::NotInit});
    op.host_data = std::shared_ptr<const std::byte>(bytes, bytes->data());
    meta_[id_] = op.outputs[0];
    batch.push_back(std::move(op));
    return id_;
  }
  OpIr make(OpKind kind, std::initializer_list<EntityId> inputs) {
    OpIr op;
    op.kind = kind;
    for (EntityId in : inputs) {
      TensorIr t = meta_.at(in);
      t.status = TensorStatus::ReadOnly;
      op.inputs.push_back(t);
    }
    return op;
  }
  EntityId push(OpIr op) {
    op.seq = ++seq_;
    op.outputs = infer_outputs(op);
    op.outputs[0].id = ++id_;
    op.outputs[0].status = TensorStatus::NotInit;
    meta_[id_] = op.outputs[0];
    batch.push_back(std::move(op));
    return id_;
  }
  std::map<EntityId, TensorIr> meta_;
  EntityId id_ = 0;
  std::uint64_t seq_ = 0;
};

TEST(DeferredChecks, ReachExactlyTheValuesComputedFromTheFailedOp) {
  DeferringDevice device;
  {
    Executor executor(device);
    Messages m;
    const EntityId x = m.upload_f32({10, 11, 12, 13});
    const EntityId good = m.upload_i64({3, 2});
    const EntityId bad = m.upload_i64({1, 7});
    const EntityId g_ok = m.gather(x, good);
    const EntityId g_bad = m.gather(x, bad);
    const EntityId dependent = m.add_scalar(m.add_scalar(g_bad, 1.0), 2.0);
    const EntityId mixed = m.add_scalar(g_ok, 1.0);
    // An index computed from the failed gather (itself out of range): the first failure wins.
    const EntityId idx = m.upload_i64({0, 5});
    const EntityId idx_from_bad = m.gather(idx, bad);
    const EntityId second = m.gather(x, idx_from_bad);
    m.drop(bad);  // the checks keep what they read
    m.drop(good);
    // Ops that overwrite freed buffers, if the pool handed the indices' buffers out again.
    const EntityId filler = m.upload_i64({-1, -1});
    const EntityId filler2 = m.upload_i64({-1, -1});
    auto r_ok = m.read(mixed);
    auto r_dep = m.read(dependent);
    auto r_second = m.read(second);
    auto r_bad = m.read(g_bad);
    executor.run_batch(m.batch);
    (void)filler, (void)filler2;

    ASSERT_TRUE(r_ok->done && r_dep->done && r_second->done && r_bad->done);
    EXPECT_FALSE(r_ok->error) << r_ok->message();
    EXPECT_EQ(r_ok->values, (std::vector<float>{14, 13}));
    for (const auto* r : {r_dep.get(), r_second.get(), r_bad.get()}) {
      ASSERT_TRUE(r->error);
      EXPECT_NE(r->message().find("index 7 is out of range"), std::string::npos) << r->message();
    }
    EXPECT_EQ(device.resolved, 4) << "each check resolved once, only where read";
    EXPECT_EQ(device.live_checks, 0) << "a resolved check gives back what it held";

    // The failure stays with the value: an op on it now fails at once, with the same error.
    m.batch.clear();
    auto r_after = m.read(m.add_scalar(g_bad, 5.0));
    executor.run_batch(m.batch);
    ASSERT_TRUE(r_after->done && r_after->error);
    EXPECT_NE(r_after->message().find("index 7 is out of range"), std::string::npos) << r_after->message();
    EXPECT_EQ(device.resolved, 4);
  }
}

// A fused kernel's check reaches only the outputs it names: the others, computed in the same
// kernel from the same input, read fine.
TEST(DeferredChecks, AFusedKernelsCheckReachesOnlyTheOutputsItNames) {
  DeferringDevice device;
  device.fail_first_fused_output = true;
  Executor executor(device);
  Messages m;
  const EntityId x = m.upload_f32({1, 2, 3});
  const EntityId first = m.add_scalar(x, 1.0);
  const EntityId second = m.scalar_op(OpKind::mul, x, 2.0);
  auto r_second = m.read(second);
  auto r_first = m.read(first);
  executor.run_batch(m.batch);
  ASSERT_EQ(executor.counters().fused_kernels.load(), 1u) << "both outputs in one kernel";
  ASSERT_TRUE(r_first->done && r_second->done);
  EXPECT_FALSE(r_second->error) << r_second->message();
  EXPECT_EQ(r_second->values, (std::vector<float>{2, 4, 6}));
  EXPECT_NE(r_first->message().find("late failure"), std::string::npos) << r_first->message();
  // Computed from the failed output afterwards: fails the same way, without resolving again.
  m.batch.clear();
  auto r_later = m.read(m.add_scalar(first, 0.0));
  executor.run_batch(m.batch);
  EXPECT_NE(r_later->message().find("late failure"), std::string::npos) << r_later->message();
  EXPECT_EQ(device.resolved, 1);
}

}  // namespace
}  // namespace kiln
