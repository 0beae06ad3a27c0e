// Recorded plans (scheduler/plan_cache.h): a batch with the structure of one planned before runs
// that plan with its own entities. The plan it gets must be exactly the plan the planner makes
// for it (entities, fused expressions, members, consumed inputs), and any difference the planner
// could see (a scalar, a shape, a status, which tensors are the same entity) must plan afresh.
// Through the engine: a model's repeated requests replay their plan, and each computes its own
// values (checked against a double-precision product computed here, exact for these operands).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/engine/kiln.h"
#include "kiln/ops/registry.h"
#include "kiln/scheduler/plan_cache.h"
#include "support/fusion_scope.h"
#include "support/reference.h"

namespace kiln {
namespace {

// Builds op messages as the engine submits them (the planner reads nothing else).
class BatchBuilder {
 public:
  explicit BatchBuilder(EntityId first_id) : next_(first_id) {}

  static TensorIr tensor(EntityId id, Shape shape, TensorStatus status = TensorStatus::ReadOnly, DType dtype = DType::f32) {
    return TensorIr{id, std::move(shape), dtype, status};
  }
  TensorIr op(OpKind kind, std::vector<TensorIr> inputs, Shape out, OpAttrs attrs = {}, DType dtype = DType::f32) {
    OpIr m;
    m.kind = kind;
    for (TensorIr& t : inputs) m.inputs.push_back(std::move(t));
    m.outputs.push_back(TensorIr{next_++, std::move(out), dtype, TensorStatus::NotInit});
    m.attrs = std::move(attrs);
    ops.push_back(m);
    TensorIr made = ops.back().outputs[0];
    made.status = TensorStatus::ReadOnly;
    return made;
  }
  void control(OpKind kind, const TensorIr& t) {
    OpIr m;
    m.kind = kind;
    m.inputs.push_back(t);
    ops.push_back(std::move(m));
  }
  std::vector<OpIr> ops;

 private:
  EntityId next_;
};

TensorIr handed_over(TensorIr t) {
  t.status = TensorStatus::ReadWrite;
  return t;
}

OpAttrs scalar(double v) {
  OpAttrs a;
  a.scalar = v;
  a.scalar_side = ScalarSide::Rhs;
  return a;
}

// What may vary between two requests of a model; the default is the request itself.
struct Variation {
  double scale = 0.5;
  std::int64_t width = 6;
  bool hand_over_product = true;  // the product's last handle goes to the bias add
  bool square_of_one_entity = true;  // mul(x, x), not mul(x, y)
};

// A request: weights (entities 1-4) in memory, the input uploaded, a matmul with bias, ReLU and
// scale as its epilogue, reshaped; exp then sum of the input (a prologue), a square dropped unread,
// two reads.
std::vector<OpIr> request(EntityId first_id, const Variation& v = {}) {
  BatchBuilder b(first_id);
  const TensorIr w = BatchBuilder::tensor(1, {8, v.width}), bias = BatchBuilder::tensor(2, {v.width});
  const TensorIr other = BatchBuilder::tensor(3, {1, 8});
  OpIr upload;
  upload.kind = OpKind::upload;
  upload.outputs.push_back(TensorIr{first_id + 100, {1, 8}, DType::f32, TensorStatus::NotInit});
  b.ops.push_back(upload);
  const TensorIr x = BatchBuilder::tensor(first_id + 100, {1, 8});
  TensorIr h = b.op(OpKind::matmul, {x, w}, {1, v.width});
  if (v.hand_over_product) h = handed_over(h);
  const TensorIr a = b.op(OpKind::add, {h, bias}, {1, v.width});
  const TensorIr r = b.op(OpKind::relu, {handed_over(a)}, {1, v.width});
  const TensorIr m = b.op(OpKind::mul, {handed_over(r)}, {1, v.width}, scalar(v.scale));
  OpAttrs flat;
  flat.ints = {v.width};
  const TensorIr y = b.op(OpKind::reshape, {handed_over(m)}, {v.width}, flat);
  const TensorIr e = b.op(OpKind::exp, {x}, {1, 8});
  OpAttrs all;
  all.ints = {0, 1};
  const TensorIr s = b.op(OpKind::sum, {handed_over(e)}, {}, all);
  const TensorIr q = b.op(OpKind::mul, {x, v.square_of_one_entity ? x : other}, {1, 8});
  b.control(OpKind::drop, q);
  b.control(OpKind::read, y);
  b.control(OpKind::read, s);
  b.control(OpKind::drop, x);
  return std::move(b.ops);
}

void describe_expr(const FusedExpr& e, std::string& out) {
  out += "[" + e.describe() + "] in";
  for (const TensorIr& t : e.inputs) out += " " + std::to_string(t.id) + ":" + t.shape.str();
  out += " out";
  for (const TensorIr& t : e.outputs) out += " " + std::to_string(t.id) + ":" + t.shape.str();
  for (const FusedAnchor& a : e.anchor) {
    out += " anchor " + std::string(op_name(a.op.kind)) + (a.keep_result ? " kept" : "");
    for (const TensorIr& t : a.op.inputs) out += " " + std::to_string(t.id);
    out += " ->";
    for (const TensorIr& t : a.op.outputs) out += " " + std::to_string(t.id);
    for (const FusedExpr& p : a.prologue) {
      out += " prologue ";
      describe_expr(p, out);
    }
  }
}

// Every part of a plan, entity ids included.
std::string describe(const Plan& plan) {
  std::string out;
  for (const PlanStep& s : plan.steps) out += (s.fused ? "G" : "op") + std::to_string(s.index) + " ";
  for (const FusedGroup& g : plan.groups) {
    out += "\ngroup of " + std::to_string(g.op_count) + " ops, members";
    for (std::uint32_t m : g.members) out += " " + std::to_string(m);
    out += ", consumed";
    for (EntityId id : g.consumed) out += " " + std::to_string(id);
    out += ": ";
    describe_expr(g.expr, out);
  }
  return out;
}

std::string fresh_plan(const std::vector<OpIr>& batch) {
  FusionPlanner planner;
  Plan plan;
  planner.plan(batch, true, plan);
  return describe(plan);
}

TEST(PlanCache, ARequestOfTheSameStructureGetsItsOwnFreshPlan) {
  PlanCache cache;
  FusionPlanner planner;
  bool replayed = true;
  const std::vector<OpIr> first = request(1000);
  ASSERT_EQ(describe(cache.plan(first, true, planner, replayed)), fresh_plan(first));
  EXPECT_FALSE(replayed);
  ASSERT_GE(cache.plan(first, true, planner, replayed).groups.size(), 2u);  // the test needs fused groups
  EXPECT_TRUE(replayed);
  for (EntityId base : {2000u, 3000u, 1000u}) {
    const std::vector<OpIr> next = request(base);
    const std::string got = describe(cache.plan(next, true, planner, replayed));
    EXPECT_TRUE(replayed) << base;
    EXPECT_EQ(got, fresh_plan(next)) << base;
  }
  // The test can fail: two requests' plans differ in their entities.
  EXPECT_NE(fresh_plan(request(1000)), fresh_plan(request(2000)));
}

TEST(PlanCache, AnythingThePlannerSeesDifferentIsPlannedAfresh) {
  const std::vector<Variation> variations = {
      {.scale = 0.25},  // a scalar the fused kernel carries
      {.width = 7},     // a shape
      {.hand_over_product = false},  // a status: the product stays alive, so it is written
      {.square_of_one_entity = false},  // which tensors are the same entity
  };
  for (const Variation& v : variations) {
    PlanCache cache;
    FusionPlanner planner;
    bool replayed = true;
    cache.plan(request(1000), true, planner, replayed);
    const std::vector<OpIr> varied = request(2000, v);
    const std::string got = describe(cache.plan(varied, true, planner, replayed));
    EXPECT_FALSE(replayed) << got;
    EXPECT_EQ(got, fresh_plan(varied));
    // ...and the varied structure is recorded in turn.
    cache.plan(request(3000, v), true, planner, replayed);
    EXPECT_TRUE(replayed);
  }
}

// The entry replayed last is compared first: a batch of another recorded structure must still
// find its own (two models served in turn), and the last one must not be taken for it.
TEST(PlanCache, TwoStructuresInTurnEachReplayTheirOwnPlan) {
  PlanCache cache;
  FusionPlanner planner;
  bool replayed = false;
  const Variation wide{.width = 7};
  cache.plan(request(1000), true, planner, replayed);
  cache.plan(request(2000, wide), true, planner, replayed);
  for (EntityId base : {3000u, 4000u, 5000u, 6000u}) {
    const std::vector<OpIr> plain = request(base), varied = request(base + 500, wide);
    EXPECT_EQ(describe(cache.plan(plain, true, planner, replayed)), fresh_plan(plain)) << base;
    EXPECT_TRUE(replayed);
    EXPECT_EQ(describe(cache.plan(varied, true, planner, replayed)), fresh_plan(varied)) << base;
    EXPECT_TRUE(replayed);
    EXPECT_EQ(describe(cache.plan(varied, true, planner, replayed)), fresh_plan(varied)) << base;  // twice in a row
    EXPECT_TRUE(replayed);
  }
}

TEST(PlanCache, WithoutFusionNothingIsRecorded) {
  PlanCache cache;
  FusionPlanner planner;
  bool replayed = true;
  for (int k = 0; k < 2; ++k) {
    const Plan& plan = cache.plan(request(1000), false, planner, replayed);
    EXPECT_FALSE(replayed);
    EXPECT_TRUE(plan.groups.empty());
  }
}

TEST(PlanCache, KeepsTheMostRecentlyUsedStructures) {
  PlanCache cache;
  FusionPlanner planner;
  bool replayed = false;
  const auto width = [](std::size_t k) { return Variation{.width = static_cast<std::int64_t>(k + 1)}; };
  for (std::size_t k = 0; k < PlanCache::kEntries; ++k) cache.plan(request(1000, width(k)), true, planner, replayed);
  cache.plan(request(2000, width(0)), true, planner, replayed);  // the oldest, used again
  EXPECT_TRUE(replayed);
  cache.plan(request(3000, width(PlanCache::kEntries)), true, planner, replayed);  // one more: evicts width(1)
  EXPECT_FALSE(replayed);
  cache.plan(request(4000, width(0)), true, planner, replayed);
  EXPECT_TRUE(replayed);
  cache.plan(request(5000, width(1)), true, planner, replayed);
  EXPECT_FALSE(replayed);
}

class PlanReplay : public ::testing::TestWithParam<Device> {};

// relu(x W + b) * scale, by rows of x [1, 24] against W [24, 16]: operands in eighths, every sum
// exact in f32 and in double, so the engine must match exactly.
TEST_P(PlanReplay, RepeatedRequestsReplayThePlanWithTheirOwnValues) {
  const test::FusionScope fusion(true);
  const Device d = GetParam();
  constexpr std::int64_t k = 24, n = 16;
  std::vector<float> w(k * n), b(n);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 7 % 19) - 9) / 8.0f;
  for (std::size_t j = 0; j < b.size(); ++j) b[j] = static_cast<float>(static_cast<int>(j % 5) - 2) / 4.0f;
  const Tensor weight = from_vector(w, {k, n}, d), bias = from_vector(b, {n}, d);
  d.sync().get();
  const std::uint64_t before = counters(d).plans_replayed;
  std::uint64_t first_fused = 0;  // fused kernels of request 0
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t fused_before = counters(d).fused_kernels;
    const double scale = r < 5 ? 0.5 : 2.0;  // a new scalar: a new structure, planned once more
    std::vector<float> x(k);
    for (std::int64_t p = 0; p < k; ++p) x[p] = static_cast<float>((p * 3 + r * 5) % 13 - 6) / 8.0f;
    const Tensor input = from_vector(x, {1, k}, d);
    const Tensor y = mul(relu(add(matmul(input, weight), bias)), scale);
    const std::vector<float> got = y.to_vector<float>().get();
    ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = b[j];
      for (std::int64_t p = 0; p < k; ++p) acc += static_cast<double>(x[p]) * w[p * n + j];
      EXPECT_EQ(got[j], static_cast<float>(std::max(acc, 0.0) * scale)) << "request " << r << ", column " << j;
    }
    // A plan that named another request's tensors would find them gone and run its groups op
    // by op (right values, no fused kernel): every request must fuse as the first did.
    const std::uint64_t fused = counters(d).fused_kernels - fused_before;
    if (r == 0) first_fused = fused;
    EXPECT_EQ(fused, first_fused) << "request " << r;
  }
  EXPECT_GE(first_fused, 1u);
  // Request 1 follows request 0's leftovers (their drops lead its batch): a structure of its
  // own. Requests 2-4 replay request 1's plan; 5 has a new scalar; 6-9 replay 5's.
  EXPECT_EQ(counters(d).plans_replayed - before, 7u);
}

INSTANTIATE_TEST_SUITE_P(Devices, PlanReplay, ::testing::ValuesIn(test::test_devices()), test::device_param_name);

}  // namespace
}  // namespace kiln
