// A character-level language model (an embedding, an LSTM and a linear head) trained with the
// Learner on a text file, then asked to write: the loss-returning step with gradient clipping,
// metrics of its own (perplexity, bits per character), an on_epoch_end callback that saves a
// sample of each epoch's model, and a sample drawn at the end, character by character, the
// LSTM's state carried from one to the next.
//
//   ./build/examples/char_lm [--text /usr/share/common-licenses/GPL-3] [--epochs 4] [--windows 8192]
//                            [--run-dir runs/char_lm] [--help]
//
// The first 90% of the text trains (each epoch `--windows` windows at random places), the rest
// validates. The run folder gets samples.txt (a sample after every epoch) and report.html.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numbers>
#include <random>
#include <sstream>
#include <string>

#include <kiln/data.h>
#include <kiln/nn.h>
#include <kiln/optim.h>
#include <kiln/train.h>

using namespace kiln;

namespace {

constexpr std::int64_t kContext = 64;  // characters a training window predicts

struct Args {
  std::filesystem::path text = "/usr/share/common-licenses/GPL-3";
  std::int64_t epochs = 4;
  std::int64_t windows = 8192;
  std::string run_dir = "runs/char_lm";
  bool help = false;
};

constexpr const char* kUsage = R"(usage: char_lm [options]
Trains a small character-level LSTM on a text file with kiln's Learner and prints a sample of
what it writes.

  --text FILE     the text to learn (default /usr/share/common-licenses/GPL-3, on every Debian system)
  --epochs N      epochs to train (default 4)
  --windows N     64-character windows trained on per epoch, at random places (default 8192)
  --run-dir DIR   samples.txt (a sample after each epoch) and report.html (default runs/char_lm)
  --help          this text
)";

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("char_lm", arg + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> std::int64_t {
      const std::string text = value();
      std::size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(text, &used);
      } catch (const std::exception&) {
      }
      if (used != text.size() || n < 1) throw Error("char_lm", arg + " takes a positive number, got '" + text + "'");
      return n;
    };
    if (arg == "--text") a.text = value();
    else if (arg == "--epochs") a.epochs = number();
    else if (arg == "--windows") a.windows = number();
    else if (arg == "--run-dir") a.run_dir = value();
    else if (arg == "--help" || arg == "-h") a.help = true;
    else throw Error("char_lm", "unknown argument " + arg + " (--help lists them)");
  }
  return a;
}

// The text's characters (bytes) as ids 0..size-1, in byte order.
struct Vocabulary {
  std::vector<char> chars;
  std::map<char, std::int64_t> ids;

  explicit Vocabulary(const std::string& text) {
    for (char c : text) ids.emplace(c, 0);
    for (auto& [c, id] : ids) {
      id = static_cast<std::int64_t>(chars.size());
      chars.push_back(c);
    }
  }
  std::int64_t size() const { return static_cast<std::int64_t>(chars.size()); }
};

struct CharLstm : nn::Module {
  nn::Embedding embed;
  nn::LSTM lstm;
  nn::Linear head;

  CharLstm(std::int64_t vocabulary, std::int64_t width = 48, std::int64_t hidden = 192)
      : embed(vocabulary, width), lstm(width, hidden, {.batch_first = true}), head(hidden, vocabulary) {}

  // ids [B, L] (i64) -> logits [B, L, vocabulary], and the state after the last character.
  std::pair<Tensor, nn::LSTMState> forward(const Tensor& ids, const std::optional<nn::LSTMState>& state = {}) const {
    nn::LSTMOutput out = lstm(embed(ids), state);
    return {head(out.output), std::move(out.state)};
  }
  KILN_MODULE(CharLstm, embed, lstm, head)
};

// A window of the text: its characters, and the ones that follow each (the targets).
data::Example window(const std::vector<std::int64_t>& ids, std::size_t start) {
  data::Example e{{}, Shape{kContext}, -1, {}};
  for (std::size_t k = 0; k < static_cast<std::size_t>(kContext); ++k) {
    e.features.push_back(static_cast<float>(ids[start + k]));
    e.target.push_back(static_cast<float>(ids[start + k + 1]));
  }
  return e;
}

// The batch's loss over every character; the logits [B * L, V] and the targets [B * L] feed the
// next-character accuracy.
train::StepOutput lm_step(const CharLstm& model, const data::Batch& batch) {
  const Tensor logits = model(cast(batch.inputs, DType::i64)).first;
  const std::int64_t n = batch.size() * kContext;
  Tensor flat = reshape(logits, {n, logits.size(2)});
  Tensor targets = reshape(cast(batch.targets, DType::i64), {n});
  return {nn::cross_entropy(flat, targets), flat, targets, n};
}

// exp(the mean loss per character): a metric of its own, as its value is not a mean of the
// steps' values. Its running total stays on the device, read without waiting.
class Perplexity final : public train::Metric {
 public:
  std::string name() const override { return "perplexity"; }
  bool higher_is_better() const override { return false; }
  void reset() override { *this = Perplexity(); }
  void update(const train::StepOutput& step) override {
    const NoGradGuard no_grad;
    Tensor weighted = mul(detach(step.loss), static_cast<double>(step.items));
    sum_ = sum_.defined() ? add(sum_, weighted) : weighted;
    items_ += step.items;
  }
  double value() const override { return read().get(); }
  train::MetricReading read() const override {
    if (items_ == 0) return train::MetricReading(NAN);
    return train::MetricReading(exp(div(sum_, static_cast<double>(items_))).item<float>(), 1.0);
  }
  std::unique_ptr<train::Metric> clone() const override { return std::make_unique<Perplexity>(); }

 private:
  Tensor sum_;
  std::int64_t items_ = 0;
};

// `length` characters after `prompt`, each drawn from the model's distribution sharpened by
// `temperature`, the LSTM's state carried along.
std::string sample(const CharLstm& trained, const Vocabulary& vocab, const std::string& prompt, std::size_t length,
                   double temperature, std::uint64_t seed) {
  CharLstm model = trained;  // shares the weights; its mode is its own
  model.eval();
  const NoGradGuard no_grad;
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> ids;
  for (char c : prompt) ids.push_back(vocab.ids.count(c) ? vocab.ids.at(c) : 0);
  auto [logits, state] = model(from_vector(ids, Shape{1, static_cast<std::int64_t>(ids.size())}));
  std::string out = prompt;
  for (std::size_t i = 0; i < length; ++i) {
    const Tensor last = squeeze(narrow(logits, 1, logits.size(1) - 1, 1), 1);  // [1, V]
    const std::vector<float> p = softmax(div(last, temperature), 1).to_vector<float>().get();
    const auto next = static_cast<std::int64_t>(std::discrete_distribution<std::int64_t>(p.begin(), p.end())(rng));
    out += vocab.chars[static_cast<std::size_t>(next)];
    std::tie(logits, state) = model(from_vector(std::vector<std::int64_t>{next}, Shape{1, 1}), state);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  if (args.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::ifstream in(args.text, std::ios::binary);
  if (!in) throw Error("char_lm", "cannot read " + args.text.string() + " (--text chooses another file)");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.size() < 20 * kContext) throw Error("char_lm", args.text.string() + " is too short to learn from");
  const Vocabulary vocab(text);
  std::vector<std::int64_t> ids;
  for (char c : text) ids.push_back(vocab.ids.at(c));
  manual_seed(0);

  // Training: windows at random places in the first 90% (a transform of the item's seed, so each
  // epoch draws others); validation: the last 10%, window after window.
  const std::size_t split = ids.size() * 9 / 10;
  auto positions = data::lazy(args.windows, [](std::int64_t i) { return i; });
  const auto train_set = data::map(positions, [&ids, split](std::int64_t, data::Rng& rng) {
    return window(ids, rng.below(split - kContext - 1));
  });
  std::vector<data::Example> held_out;
  for (std::size_t start = split; start + kContext + 1 <= ids.size(); start += kContext)
    held_out.push_back(window(ids, start));
  const data::DataLoader train_loader(train_set, {.batch_size = 32, .shuffle = false, .seed = 1, .workers = 1});
  const data::DataLoader valid_loader(data::in_memory(std::move(held_out)), {.batch_size = 64});

  std::filesystem::create_directories(args.run_dir);
  const std::string samples = args.run_dir + "/samples.txt";
  std::ofstream(samples, std::ios::trunc) << "";
  // The learning rate is Adam's own: the Learner needs no schedule for a constant one.
  train::Learner learner(CharLstm(vocab.size()), std::make_unique<optim::Adam>(optim::AdamOptions{.lr = 4e-3}), lm_step,
                         {.epochs = args.epochs,
                          .clip_grad_norm = 1.0,  // an LSTM's gradients spike now and then
                          .report = args.run_dir + "/report.html",
                          .name = "char-level LSTM on " + args.text.filename().string()});
  // Bits per character is the loss in base 2: a mean of the steps' values, as LambdaMetric takes.
  auto bits = [](const train::StepOutput& s) { return div(s.loss, std::numbers::ln2); };
  learner.add_metric(std::make_unique<Perplexity>())
      .add_metric(std::make_unique<train::LambdaMetric>("bits/char", /*higher_is_better=*/false, bits))
      .add_metric(train::accuracy());  // of the next character
  learner.on_epoch_end([&](train::EpochEnd& e) {
    std::ofstream(samples, std::ios::app) << "--- epoch " << e.epoch << " (valid bits/char "
                                          << e.value("bits/char").value_or(NAN) << ")\n"
                                          << sample(learner.model(), vocab, "The ", 160, 0.8, e.epoch) << "\n";
  });
  const train::FitResult fit = learner.fit(train_loader, &valid_loader);
  if (fit.interrupted) return 130;

  std::printf("\nsampled at temperature 0.8:\n\n%s\n\nsamples of every epoch: %s\nreport: %s\n",
              sample(learner.model(), vocab, "The ", 400, 0.8, 7).c_str(), samples.c_str(),
              fit.report ? fit.report->c_str() : "-");
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "%s\n", e.what());  // "char_lm: ..." or the op that failed
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "char_lm: %s\n", e.what());
  return 1;
}
