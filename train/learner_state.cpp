#include "kiln/train/learner_state.h"

#include "kiln/base/error.h"
#include "kiln/train/json_file.h"

namespace kiln::train {

namespace {

constexpr const char* kFormat = "kiln.learner_state/1";

Json to_json(const PhaseSnapshot& phase) {
  Json metrics = Json::array();
  for (const auto& [name, state] : phase.metrics) {
    Json m{{"name", name}, {"state", nullptr}};
    if (state) {
      Json totals = Json::array();
      for (double t : state->totals) totals.push_back(json_number(t));
      m["state"] = {{"totals", totals}, {"counts", state->counts}};
    }
    metrics.push_back(std::move(m));
  }
  return {{"batches", phase.batches}, {"items", phase.items}, {"seconds", phase.seconds}, {"metrics", metrics}};
}

PhaseSnapshot phase_from_json(const Json& j) {
  PhaseSnapshot phase;
  phase.batches = j.at("batches").get<std::int64_t>();
  phase.items = j.at("items").get<std::int64_t>();
  phase.seconds = j.at("seconds").get<double>();
  for (const Json& m : j.at("metrics")) {
    std::optional<MetricState> state;
    if (const Json& s = m.at("state"); !s.is_null()) {
      state.emplace();
      for (const Json& t : s.at("totals")) state->totals.push_back(number_from_json(t));
      state->counts = s.at("counts").get<std::vector<std::int64_t>>();
    }
    phase.metrics.emplace_back(m.at("name").get<std::string>(), std::move(state));
  }
  return phase;
}

}  // namespace

void save_learner_state(const LearnerState& state, const std::filesystem::path& file) {
  Json doc{{"format", kFormat},
           {"epoch", state.at.epoch},
           {"batch", state.at.batch},
           {"best", state.best ? json_number(*state.best) : Json(nullptr)},
           {"since_best", state.since_best},
           {"train", state.train ? to_json(*state.train) : Json(nullptr)},
           {"file_sizes", state.file_sizes},
           {"layout",
            {{"world_size", state.layout.world_size},
             {"batch_size", state.layout.batch_size},
             {"train_batches", state.layout.train_batches}}}};
  save_json(file, doc, "train::save_learner_state");
}

LearnerState load_learner_state(const std::filesystem::path& file) {
  return load_json(file, "train::load_learner_state", "a Learner state", [&](const Json& doc) {
    KILN_CHECK(doc.at("format").get<std::string>() == kFormat, "train::load_learner_state",
               file.string() + " is not a Learner state (format " + doc.at("format").dump() + ")");
    LearnerState state;
    state.at = {doc.at("epoch").get<std::int64_t>(), doc.at("batch").get<std::int64_t>()};
    if (const Json& best = doc.at("best"); !best.is_null()) state.best = number_from_json(best);
    state.since_best = doc.at("since_best").get<std::int64_t>();
    if (const Json& train = doc.at("train"); !train.is_null()) state.train = phase_from_json(train);
    state.file_sizes = doc.at("file_sizes").get<std::map<std::string, std::uintmax_t>>();
    if (const auto layout = doc.find("layout"); layout != doc.end()) {  // absent from older checkpoints
      state.layout.world_size = layout->at("world_size").get<int>();
      state.layout.batch_size = layout->at("batch_size").get<std::int64_t>();
      state.layout.train_batches = layout->at("train_batches").get<std::int64_t>();
    }
    return state;
  });
}

Progress resume_point(LearnerState& state, const DataLayout& layout) {
  const DataLayout& writer = state.layout;
  if (!writer.recorded() || state.at.batch == 0 || writer.same_steps(layout)) return state.at;
  Progress here{state.at.epoch, layout.train_batches};  // written after the epoch's training
  const std::int64_t seen = state.at.batch * writer.batch_size * writer.world_size;
  if (state.at.batch < writer.train_batches) {
    const std::int64_t per_step = layout.batch_size * layout.world_size;
    KILN_CHECK(per_step > 0 && seen % per_step == 0, "Learner",
               "the checkpoint of epoch " + std::to_string(state.at.epoch + 1) + " batch " +
                   std::to_string(state.at.batch) + " was written by " + std::to_string(writer.world_size) +
                   " process(es) with batches of " + std::to_string(writer.batch_size) + ", " + std::to_string(seen) +
                   " samples into the epoch; " + std::to_string(layout.world_size) + " process(es) with batches of " +
                   std::to_string(layout.batch_size) + " take " + std::to_string(per_step) +
                   " samples a step, and no step starts there. Choose a batch size whose steps divide " +
                   std::to_string(seen) + " (the same global batch of " +
                   std::to_string(writer.batch_size * writer.world_size) +
                   " always does), or resume from a checkpoint written at an epoch's end");
    here.batch = seen / per_step;
  }
  if (state.train) {
    state.train->batches = here.batch;
    state.train->items = state.train->items * writer.world_size / layout.world_size;  // this process's share
  }
  return here;
}

void check_file_sizes(const LearnerState& state, const std::filesystem::path& state_file) {
  for (const auto& [name, size] : state.file_sizes) {
    const std::filesystem::path file = state_file.parent_path() / name;
    std::error_code ec;
    const std::uintmax_t actual = std::filesystem::file_size(file, ec);
    KILN_CHECK(!ec, "Learner", file.string() + " is missing (" + ec.message() + ")");
    KILN_CHECK(actual == size, "Learner",
               file.string() + " has " + std::to_string(actual) + " bytes where " + std::to_string(size) +
                   " were written: it is truncated or damaged");
  }
}

}  // namespace kiln::train
