// kiln_ort_interleaved: mlp_infer_b1 in kiln and in ONNX Runtime in one process, in windows that
// take turns, so that both see the same spells of the machine. The contract's figures
// (bench/run --compare) measure kiln and its twins one after another, seconds apart, and on the
// 2-core VM a spell moves a request's time by a third: the ratio of two such figures moved
// between 0.75 and 0.97 over runs where this probe's stayed within a few hundredths.
//
//   kiln_ort_interleaved --lib libonnxruntime.so.1 --model mlp.onnx [--rounds N]
//
// Each round runs, 200 ms each after 30 ms of warm-up: kiln's MLP as raw ops, as an nn module,
// either as a RecordedPass, and ONNX Runtime's session on 2 and on 1 intra-op threads (the
// twin's model and options). One JSON line: each one's p50 and p99 over all its windows, ONNX
// Runtime's best of the two, and each kiln form's ratio to it (of the p50s; and the median and
// largest of the per-round ratios, each round against the same round's best ONNX Runtime).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/ort/ort_session.h"
#include "bench/serving_mlp.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Contender {
  const char* field;
  std::function<void()> request;
  std::vector<double> us;         // every request's latency
  std::vector<double> round_p50;  // one per round
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  std::string lib, model;
  int rounds = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) kiln_ort::fail(a + " needs a value");
    if (a == "--lib")
      lib = argv[++i];
    else if (a == "--model")
      model = argv[++i];
    else if (a == "--rounds")
      rounds = std::max(1, std::atoi(argv[++i]));
    else
      kiln_ort::fail("usage: kiln_ort_interleaved --lib libonnxruntime.so.1 --model mlp.onnx [--rounds N]");
  }
  if (lib.empty() || model.empty()) kiln_ort::fail("--lib and --model are required");
  kiln_ort::g_program = "kiln_ort_interleaved";
  kiln_ort::Env* env = kiln_ort::open_runtime(lib);
  const kiln_ort::Session ort2(env, model, 2, /*spin=*/true), ort1(env, model, 1, /*spin=*/true);
  kiln_ort::check_output(ort2, model);
  std::vector<float> in = kiln_ort::check_input(), out(kiln_ort::kOut);

  const Device d = Device::cpu();
  const NoGradGuard no_grad;
  const bench::RawMlp raw(d);
  const nn::Sequential module = bench::module_mlp(d);
  const RecordedPass raw_pass = bench::recorded(raw, d), module_pass = bench::recorded(module, d);
  const std::vector<float> x = bench::request_input(0);
  auto kiln_request = [&](const auto& m) {
    return [model = &m, &x, d] { (void)(*model)(from_vector(x, {1, 784}, d)).template to_vector<float>().get(); };
  };
  std::vector<Contender> all = {
      {"kiln", kiln_request(raw), {}, {}},
      {"kiln_module", kiln_request(module), {}, {}},
      {"kiln_recorded", kiln_request(raw_pass), {}, {}},
      {"kiln_module_recorded", kiln_request(module_pass), {}, {}},
      {"ort_2_threads", [&] { ort2.infer(in.data(), out.data()); }, {}, {}},
      {"ort_1_thread", [&] { ort1.infer(in.data(), out.data()); }, {}, {}},
  };
  for (int r = 0; r < rounds; ++r)
    for (Contender& c : all) {
      const auto warm_until = Clock::now() + std::chrono::milliseconds(30);
      while (Clock::now() < warm_until) c.request();
      std::vector<double> window;
      const auto until = Clock::now() + std::chrono::milliseconds(200);
      for (auto t0 = Clock::now(); t0 < until;) {
        c.request();
        const auto t1 = Clock::now();
        window.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        t0 = t1;
      }
      c.round_p50.push_back(median(window));
      c.us.insert(c.us.end(), window.begin(), window.end());
    }

  const Contender& ort_best = median(all[4].us) <= median(all[5].us) ? all[4] : all[5];
  std::string json = "{\"id\": \"mlp_infer_b1_interleaved\", \"rounds\": " + std::to_string(rounds) +
                     ", \"ort_threads\": " + (&ort_best == &all[4] ? "2" : "1");
  char buf[256];
  for (Contender& c : all) {
    std::sort(c.us.begin(), c.us.end());
    std::snprintf(buf, sizeof buf, ", \"%s_p50_us\": %.2f, \"%s_p99_us\": %.2f", c.field, c.us[c.us.size() / 2],
                  c.field, c.us[c.us.size() * 99 / 100]);
    json += buf;
  }
  for (int k = 0; k < 4; ++k) {
    const Contender& c = all[static_cast<std::size_t>(k)];
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) ratios.push_back(c.round_p50[r] / ort_best.round_p50[r]);
    std::sort(ratios.begin(), ratios.end());
    std::snprintf(buf, sizeof buf,
                  ", \"%s_per_ort\": %.3f, \"%s_per_ort_round_median\": %.3f, \"%s_per_ort_round_max\": %.3f", c.field,
                  c.us[c.us.size() / 2] / ort_best.us[ort_best.us.size() / 2], c.field, ratios[ratios.size() / 2],
                  c.field, ratios.back());
    json += buf;
  }
  std::printf("%s}\n", json.c_str());
}
