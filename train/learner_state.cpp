#include "train/learner_state.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "io/atomic_file.h"
#include "ops/error.h"

namespace kiln::train {

namespace {

using Json = nlohmann::json;
constexpr const char* kFormat = "kiln.learner_state/1";

// JSON has no NaN or infinity: those are written as strings (a diverged loss's totals).
Json state_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;  // written with the digits that read back the same double
}

double state_number(const Json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.get<std::string>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::invalid_argument("\"" + s + "\" is not a number");
}

Json to_json(const PhaseSnapshot& phase) {
  Json metrics = Json::array();
  for (const auto& [name, state] : phase.metrics) {
    Json m{{"name", name}, {"state", nullptr}};
    if (state) {
      Json totals = Json::array();
      for (double t : state->totals) totals.push_back(state_number(t));
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
      for (const Json& t : s.at("totals")) state->totals.push_back(state_number(t));
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
           {"best", state.best ? state_number(*state.best) : Json(nullptr)},
           {"since_best", state.since_best},
           {"train", state.train ? to_json(*state.train) : Json(nullptr)},
           {"file_sizes", state.file_sizes}};
  const std::string text = doc.dump();
  io::detail::AtomicFile out(file, "train::save_learner_state");
  out.write(std::as_bytes(std::span(text)));
  out.commit();
}

LearnerState load_learner_state(const std::filesystem::path& file) {
  std::ifstream in(file);
  KILN_CHECK(in.good(), "train::load_learner_state", "cannot open " + file.string());
  LearnerState state;
  try {
    const Json doc = Json::parse(in);
    KILN_CHECK(doc.at("format").get<std::string>() == kFormat, "train::load_learner_state",
               file.string() + " is not a Learner state (format " + doc.at("format").dump() + ")");
    state.at = {doc.at("epoch").get<std::int64_t>(), doc.at("batch").get<std::int64_t>()};
    if (const Json& best = doc.at("best"); !best.is_null()) state.best = state_number(best);
    state.since_best = doc.at("since_best").get<std::int64_t>();
    if (const Json& train = doc.at("train"); !train.is_null()) state.train = phase_from_json(train);
    state.file_sizes = doc.at("file_sizes").get<std::map<std::string, std::uintmax_t>>();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("train::load_learner_state", file.string() + " is not a Learner state: " + e.what());
  }
  return state;
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
