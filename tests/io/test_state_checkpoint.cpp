// optim::State files (numbers exact to the bit) and checkpoints: everything comes back, the
// random stream resumes where it stopped, and a write that fails — a full disk, a missing
// directory, a value that cannot be computed — leaves the previous checkpoint as it was.
#include <signal.h>
#include <sys/resource.h>

#include <bit>
#include <cmath>

#include "kiln/io/state_io.h"
#include "io_test_support.h"

namespace kiln::test {
namespace {

struct Small : nn::Module {
  nn::Linear fc{3, 2};
  nn::BatchNorm1d bn{2};
  KILN_MODULE(Small, fc, bn)
};

struct WithDropout : nn::Module {
  nn::Linear fc{4, 4};
  nn::Dropout drop{{.p = 0.5, .seed = 3}};
  nn::Sequential tail{nn::Dropout({.p = 0.5, .seed = 4})};
  Tensor forward(const Tensor& x) const { return tail(drop(fc(x))); }
  KILN_MODULE(WithDropout, fc, drop, tail)
};

struct Big : nn::Module {
  nn::Linear fc{64, 64};  // 16 KiB of weights
  KILN_MODULE(Big, fc)
};

std::vector<double> tricky_numbers() {
  return {0.1,
          1.0 / 3.0,
          1e-300,
          4.9406564584124654e-324,
          -0.0,
          1e308,
          123456789012345678.0,
          std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity(),
          std::numeric_limits<double>::quiet_NaN()};
}

void expect_same_numbers(const std::map<std::string, double>& got, const std::map<std::string, double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, value] : want) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(got.count(name));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(got.at(name)));
    } else {
      EXPECT_EQ(std::bit_cast<std::uint64_t>(got.at(name)), std::bit_cast<std::uint64_t>(value));
    }
  }
}

optim::State adam_like_state(const nn::Module& m) {
  optim::State s;
  for (const nn::NamedTensor& p : m.named_parameters()) {
    s.tensors.push_back({"exp_avg." + p.name, add(zeros_like(p.tensor), 0.25)});
    s.tensors.push_back({"exp_avg_sq." + p.name, add(zeros_like(p.tensor), 0.0625)});
  }
  const auto numbers = tricky_numbers();
  for (std::size_t i = 0; i < numbers.size(); ++i) s.numbers[std::to_string(i) + "_n"] = numbers[i];
  s.numbers["step"] = 17;
  return s;
}

TEST(StateIo, NumbersComeBackBitForBitAndReadWell) {
  for (const double v : tricky_numbers()) {
    const auto back = io::detail::parse_number(io::detail::format_number(v));
    ASSERT_TRUE(back.has_value()) << v;
    if (!std::isnan(v)) {
      EXPECT_EQ(std::bit_cast<std::uint64_t>(*back), std::bit_cast<std::uint64_t>(v));
    }
  }
  EXPECT_EQ(io::detail::format_number(0.001), "0.001");
  EXPECT_EQ(io::detail::format_number(-0.0), "-0");
  EXPECT_FALSE(io::detail::parse_number("0.1x").has_value());
  EXPECT_FALSE(io::detail::parse_number("").has_value());
  EXPECT_FALSE(io::detail::parse_number(" 1").has_value());
}

TEST(StateIo, AStateRoundTrips) {
  ScratchDir dir;
  Small m;
  const optim::State saved = adam_like_state(m);
  io::save_state(saved, dir / "adam.safetensors");
  const optim::State loaded = io::load_state(dir / "adam.safetensors");
  expect_same_numbers(loaded.numbers, saved.numbers);
  ASSERT_EQ(loaded.tensors.size(), saved.tensors.size());
  for (const nn::NamedTensor& t : saved.tensors) {
    SCOPED_TRACE(t.name);
    const Tensor* l = find_named(loaded.tensors, t.name);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(values_of(*l), values_of(t.tensor));
  }
}

TEST(StateIo, OnlyStateFilesLoadAsStatesAndEveryNumberMustBeOne) {
  ScratchDir dir;
  expect_error([&] { return io::load_state(io_data("torch_net.safetensors")); }, "load_state",
               {"torch_net.safetensors", "not an optimizer or scheduler state"});
  write_raw_safetensors(dir / "s.safetensors", {}, {{"format", "kiln.optim.State"}, {"lr", "fast"}});
  expect_error([&] { return io::load_state(dir / "s.safetensors"); }, "load_state",
               {"s.safetensors", "metadata 'lr' holds 'fast', not a number"});
  optim::State clash;
  clash.numbers["format"] = 1.0;
  expect_error(
      [&] {
        io::save_state(clash, dir / "c.safetensors");
        return 0;
      },
      "save_state", {"'format' clashes with a reserved key"});
}

TEST(Checkpoint, EverythingComesBackAndTheRandomStreamResumes) {
  ScratchDir dir;
  Small a, b;
  a.map_parameters_in_place([](const std::string&, const Tensor& v) { return add(zeros_like(v), 0.5); });
  Generator gen(42);
  (void)randn(Shape{8}, gen);
  (void)randn(Shape{8}, gen);
  optim::State scheduler;
  scheduler.numbers = {{"last_lr", 0.001}, {"last_epoch", 3}};
  const optim::State optimizer = adam_like_state(a);
  io::save_checkpoint(dir / "ckpt.safetensors", a, {optimizer, scheduler, 1234, gen});

  const io::TrainingState s = io::load_checkpoint(dir / "ckpt.safetensors", b);
  EXPECT_EQ(s.step, 1234);
  expect_same_numbers(s.optimizer.numbers, optimizer.numbers);
  expect_same_numbers(s.scheduler.numbers, scheduler.numbers);
  EXPECT_EQ(s.optimizer.tensors.size(), optimizer.tensors.size());
  EXPECT_EQ(values_of(find_named(s.optimizer.tensors, "exp_avg.fc.weight")[0]), std::vector<double>(6, 0.25));
  EXPECT_TRUE(s.scheduler.tensors.empty());
  for (const nn::NamedTensor& t : a.state_dict()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(values_of(*find_named(b.state_dict(), t.name)), values_of(t.tensor));
  }
  ASSERT_TRUE(s.generator.has_value());
  EXPECT_EQ(s.generator->seed(), 42u);
  EXPECT_EQ(s.generator->draws(), 2u);
  Generator resumed = *s.generator;
  EXPECT_EQ(values_of(randn(Shape{8}, resumed)), values_of(randn(Shape{8}, gen)));
}

TEST(Checkpoint, WithoutAGeneratorTheDefaultOneIsSaved) {
  ScratchDir dir;
  Small m;
  manual_seed(7);
  (void)rand(Shape{2});
  io::save_checkpoint(dir / "ckpt.safetensors", m, {});
  const io::TrainingState s = io::load_checkpoint(dir / "ckpt.safetensors", m);
  EXPECT_EQ(s.generator->seed(), 7u);
  EXPECT_EQ(s.generator->draws(), default_generator().draws());
  EXPECT_EQ(s.step, 0);
}

TEST(Checkpoint, DropoutMasksResumeWhereTheyWere) {
  // A checkpoint written after three training calls: the model loaded from it draws the fourth
  // call's masks, as the model that wrote it does, not the first call's again.
  ScratchDir dir;
  manual_seed(2);
  WithDropout m;
  const Tensor x = ones(Shape{8, 4});
  for (int i = 0; i < 3; ++i) (void)m(x);
  io::save_checkpoint(dir / "ckpt.safetensors", m, {});
  EXPECT_EQ(nn::random_draws_by_path(m), (std::map<std::string, std::uint64_t>{{"drop", 3}, {"tail.0", 3}}));
  WithDropout fresh;
  (void)io::load_checkpoint(dir / "ckpt.safetensors", fresh);
  EXPECT_EQ(nn::random_draws_by_path(fresh), nn::random_draws_by_path(m));
  EXPECT_EQ(values_of(fresh(x)), values_of(m(x)));
}

TEST(Checkpoint, LoadingIsAllOrNothing) {
  ScratchDir dir;
  Small a;
  Big other;
  io::save_checkpoint(dir / "ckpt.safetensors", a, {});
  const auto id = other.fc.weight.value().id();
  expect_error(
      [&] { return io::load_checkpoint(dir / "ckpt.safetensors", other); }, "load_checkpoint",
      {"ckpt.safetensors", "7 problems",
       "wrong shape: 'model.fc.weight' (module path 'fc.weight') is [2, 3] in the file, [64, 64] in the module",
       "unexpected: 'model.bn.weight' (F32[2] in the file, module path 'bn.weight')"});
  EXPECT_EQ(other.fc.weight.value().id(), id);
  expect_error([&] { return io::load_checkpoint(io_data("torch_net.safetensors"), a); }, "load_checkpoint",
               {"torch_net.safetensors", "not a kiln checkpoint"});
}

// Sets RLIMIT_FSIZE for its lifetime: a write past the limit fails (EFBIG) as on a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = ::signal(SIGXFSZ, SIG_IGN);  // report EFBIG instead of killing the process
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit saved_{};
  void (*previous_handler_)(int) = nullptr;
};

TEST(Checkpoint, AFullDiskLeavesTheOldCheckpointInPlace) {
  ScratchDir dir;
  const auto path = dir / "ckpt.safetensors";
  Small small;
  io::save_checkpoint(path, small, {.step = 1});
  const std::vector<std::byte> good = file_bytes(path);
  ASSERT_LT(good.size(), 4096u);

  Big big;
  const std::vector<nn::NamedTensor> big_state = big.state_dict();
  for (const auto& t : big_state) (void)values_of(t.tensor);  // computed before the limit
  std::string message;
  {
    FileSizeLimit limit(4096);
    try {
      io::save_checkpoint(path, big, {.step = 2});
    } catch (const Error& e) {
      message = e.what();
    }
  }
  EXPECT_NE(message.find("ckpt.safetensors: cannot write"), std::string::npos) << message;
  EXPECT_NE(message.find("the existing file, if any, is unchanged"), std::string::npos) << message;
  EXPECT_EQ(file_bytes(path), good);
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"ckpt.safetensors"})) << "the temporary file was left behind";
  EXPECT_EQ(io::load_checkpoint(path, small).step, 1);
}

// A tensor whose value fails to compute (here: out of memory) is found after the header and
// the tensors before it were written: the temporary file goes, the old checkpoint stays.
TEST(Checkpoint, AValueThatFailsHalfwayThroughLeavesTheOldCheckpointInPlace) {
  ScratchDir dir;
  const auto path = dir / "ckpt.safetensors";
  Small small;
  io::save_checkpoint(path, small, {.step = 1});
  const std::vector<std::byte> good = file_bytes(path);

  optim::State failing;
  failing.tensors.push_back({"a_computed", ones(Shape{4})});
  (void)values_of(failing.tensors[0].tensor);
  {
    Device::cpu().sync().get();
    release_cached_memory();
    set_memory_limit(Device::cpu(), memory_stats().bytes_reserved + (1 << 20));
    failing.tensors.push_back({"z_too_big", zeros(Shape{1 << 20})});  // 4 MiB over a 1 MiB cap
    Device::cpu().sync().get();
    set_memory_limit(Device::cpu(), 0);
  }
  expect_error(
      [&] {
        io::save_checkpoint(path, small, {.optimizer = failing, .step = 2});
        return 0;
      },
      "save_checkpoint",
      {"ckpt.safetensors", "tensor 'optimizer.z_too_big' could not be read", "out of memory",
       "the existing file, if any, is unchanged"});
  EXPECT_EQ(file_bytes(path), good);
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"ckpt.safetensors"}));
}

TEST(Checkpoint, AMissingDirectoryIsAnErrorNamingThePath) {
  ScratchDir dir;
  Small m;
  expect_error(
      [&] {
        io::save_checkpoint(dir / "no" / "ckpt.safetensors", m, {});
        return 0;
      },
      "save_checkpoint", {"ckpt.safetensors", "cannot create a file in", "No such file or directory"});
}

}  // namespace
}  // namespace kiln::test
