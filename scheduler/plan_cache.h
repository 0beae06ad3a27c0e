// Recorded plans: a batch whose messages have the structure of a batch planned before runs that
// batch's plan again, with this batch's entities put in. A served model's requests (and a training
// loop's steps) submit the same messages every time, only with new entities: planning them afresh
// was 15% of a batched request's time on a 2-core machine. (CUDA graphs replay recorded work the
// same way; here only the planning is recorded, the kernels still run from the live messages.)
//
// The structure (the signature) is everything the planner looks at: per message its kind,
// attributes (scalars included: fused nodes carry them), and per tensor its dtype, shape, status
// and which entity it is, numbered by first appearance in the batch. Two batches with equal
// signatures get equal plans up to their entity ids, because the planner is a function of those
// alone; the ids sit in a recorded plan's fused expressions and consumed lists, and each is
// written over with the new batch's entity of the same number.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kiln/scheduler/fusion_planner.h"

namespace kiln {

class PlanCache {
 public:
  static constexpr std::size_t kEntries = 16;  // batch sizes 1-8 of a served model, with room
  static constexpr std::size_t kMaxMessages = 4096;  // a longer batch is planned every time

  // The plan for `batch`: a recorded one when a batch of this structure was planned before
  // (`replayed` says so), else a fresh one from `planner`, recorded for next time. Valid until the
  // next call.
  Plan& plan(std::span<const OpIr> batch, bool fusion_enabled, FusionPlanner& planner, bool& replayed);

 private:
  struct IdSlot {
    EntityId* id;         // inside the recorded plan
    std::uint32_t number;  // the entity's number in the batch's signature
  };
  struct Entry {
    std::vector<std::uint64_t> signature;
    std::uint64_t hash = 0;
    Plan plan;
    std::vector<IdSlot> ids;
    std::uint64_t last_use = 0;
  };

  // Fills signature_ and entities_ (number -> this batch's id); the numbers come from index_.
  void sign(std::span<const OpIr> batch);
  std::uint32_t number_of(EntityId id);
  // Records where `entry.plan` holds ids; false if one is not among the batch's entities.
  bool record_ids(Entry& entry);

  // An open-addressing map from entity id to its number, cleared per batch by bumping
  // generation_ instead of wiping the table.
  struct IndexCell {
    EntityId id = 0;
    std::uint32_t number = 0;
    std::uint32_t generation = 0;
  };
  std::vector<IndexCell> index_;
  std::uint32_t generation_ = 0;

  std::vector<std::uint64_t> signature_;
  std::vector<EntityId> entities_;
  std::vector<std::unique_ptr<Entry>> entries_;
  Entry* last_ = nullptr;  // the entry replayed last, compared first
  std::uint64_t uses_ = 0;
  Plan unrecorded_;  // the plan of a batch too long to record, or planned without fusion
};

}  // namespace kiln
