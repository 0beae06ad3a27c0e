// save_model / load_model: state_dict names, buffers, frozen parameters, partial loads by prefix
// or name map (a backbone into a bigger model), one error listing every mismatch, no change on
// failure, and dtype conversion only when asked.
#include "io_test_support.h"

namespace kiln::test {
namespace {

struct Backbone : nn::Module {
  nn::Linear l1{3, 4};
  nn::BatchNorm1d bn{4};
  KILN_MODULE(Backbone, l1, bn)
};

struct Classifier : nn::Module {
  Backbone backbone;
  nn::Linear head{4, 2};
  KILN_MODULE(Classifier, backbone, head)
};

struct Projection : nn::Module {
  nn::Linear proj{5, 4};
  KILN_MODULE(Projection, proj)
};

std::map<std::string, std::vector<double>> state_values(const nn::Module& m) {
  std::map<std::string, std::vector<double>> out;
  for (const nn::NamedTensor& t : m.state_dict()) out[t.name] = values_of(t.tensor);
  return out;
}

std::map<std::string, EntityId> state_ids(const nn::Module& m) {
  std::map<std::string, EntityId> out;
  for (const nn::NamedTensor& t : m.state_dict()) out[t.name] = t.tensor.id();
  return out;
}

// Values that no fresh module has: running statistics and a step count included.
void make_distinct(nn::Module& m, float base) {
  m.map_parameters_in_place([&](const std::string&, const Tensor& v) { return add(zeros_like(v), base); });
  m.map_buffers_in_place([&](const std::string& path, const Tensor& v) {
    return v.dtype() == DType::i64 ? add(v, static_cast<double>(base) + 10.0) : add(zeros_like(v), base + 0.5);
  });
}

TEST(ModuleIo, SaveThenLoadRestoresParametersAndBuffers) {
  ScratchDir dir;
  Classifier a, b;
  make_distinct(a, 1.0f);
  io::save_model(a, dir / "m.safetensors");
  EXPECT_EQ(io::SafeTensorsFile(dir / "m.safetensors").metadata().at("format"), "pt");
  const io::LoadReport r = io::load_model(b, dir / "m.safetensors");
  EXPECT_EQ(r.loaded.size(), 9u);
  EXPECT_EQ(state_values(b), state_values(a));
  EXPECT_EQ(b.backbone.bn.num_batches_tracked.get().item<std::int64_t>().get(), 11);
}

TEST(ModuleIo, FrozenParametersStayFrozenAndTrainableOnesTrainable) {
  ScratchDir dir;
  Classifier a, b;
  make_distinct(a, 2.0f);
  io::save_model(a, dir / "m.safetensors");
  b.backbone.freeze();
  io::load_model(b, dir / "m.safetensors");
  EXPECT_FALSE(b.backbone.l1.weight.trainable());
  EXPECT_TRUE(b.head.weight.trainable());
  EXPECT_EQ(b.named_parameters(/*trainable_only=*/true).size(), 2u);
  EXPECT_EQ(values_of(b.backbone.l1.weight.value()), values_of(a.backbone.l1.weight.value()));
}

TEST(ModuleIo, ABackboneLoadsIntoABiggerModelUnderAModulePrefix) {
  ScratchDir dir;
  Backbone pretrained;
  make_distinct(pretrained, 3.0f);
  io::save_model(pretrained, dir / "backbone.safetensors");
  Classifier model;
  const auto head_before = values_of(model.head.weight.value());
  const io::LoadReport r = io::load_model(model, dir / "backbone.safetensors", {.module_prefix = "backbone."});
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"backbone.bn.num_batches_tracked", "backbone.bn.bias",
                                                "backbone.bn.running_mean", "backbone.bn.running_var",
                                                "backbone.bn.weight", "backbone.l1.bias", "backbone.l1.weight"}));
  EXPECT_TRUE(r.missing.empty()) << "the head is outside the prefix, not missing";
  EXPECT_EQ(state_values(model.backbone), state_values(pretrained));
  EXPECT_EQ(values_of(model.head.weight.value()), head_before);
}

TEST(ModuleIo, PartOfAFileLoadsUnderAFilePrefix) {
  ScratchDir dir;
  Classifier full;
  make_distinct(full, 4.0f);
  io::save_model(full, dir / "full.safetensors");
  Backbone backbone;
  const io::LoadReport r = io::load_model(backbone, dir / "full.safetensors", {.file_prefix = "backbone."});
  EXPECT_EQ(r.loaded.size(), 7u);
  EXPECT_TRUE(r.unexpected.empty()) << "the head is outside the prefix, not unexpected";
  EXPECT_EQ(state_values(backbone), state_values(full.backbone));
}

TEST(ModuleIo, ANameMapRenamesAndSkips) {
  ScratchDir dir;
  TorchNet net;
  io::load_model(net, io_data("torch_net.safetensors"));
  Projection p;
  const auto rename = [](const std::string& name) -> std::optional<std::string> {
    if (name.rfind("fc.", 0) == 0) return "proj." + name.substr(3);
    return std::nullopt;  // everything else in the file is not for this module
  };
  const io::LoadReport r = io::load_model(p, io_data("torch_net.safetensors"), {.rename = rename});
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"proj.bias", "proj.weight"}));
  EXPECT_EQ(values_of(p.proj.weight.value()), values_of(net.fc.weight.value()));

  const auto collide = [](const std::string&) -> std::optional<std::string> { return "proj.bias"; };
  expect_error([&] { return io::load_model(p, io_data("torch_net.safetensors"), {.rename = collide}); }, "load_model",
               {"ambiguous", "both load into 'proj.bias'"});
}

// One file with one of each problem: all four reported in one error, and nothing changes.
TEST(ModuleIo, EveryMismatchIsReportedAtOnceAndNothingChanges) {
  ScratchDir dir;
  Backbone m;
  const auto values_before = state_values(m);
  const auto ids_before = state_ids(m);
  io::save_file({{"l1.weight", ones(Shape{3, 4})},  // the module's is [4, 3]
                 {"l1.bias", ones(Shape{4})},
                 {"bn.weight", ones(Shape{4})},  // bn.bias is missing
                 {"bn.running_mean", ones(Shape{4})},
                 {"bn.running_var", ones(Shape{4})},
                 {"bn.num_batches_tracked", scalar(3.0)},  // f32, the module's is i64
                 {"bn.momentum", ones(Shape{1})}},         // no such tensor in the module
                dir / "bad.safetensors");
  expect_error([&] { return io::load_model(m, dir / "bad.safetensors"); }, "load_model",
               {"bad.safetensors", "4 problems", "nothing was loaded", "missing: 'bn.bias' (f32[4] in the module)",
                "unexpected: 'bn.momentum' (F32[1] in the file)",
                "wrong shape: 'l1.weight' is [3, 4] in the file, [4, 3] in the module",
                "wrong dtype: 'bn.num_batches_tracked' is F32 in the file, i64 in the module (no conversion"});
  EXPECT_EQ(state_values(m), values_before);
  EXPECT_EQ(state_ids(m), ids_before);

  // Not strict: missing and unexpected are reported, not errors; a wrong shape still is.
  expect_error([&] { return io::load_model(m, dir / "bad.safetensors", {.strict = false}); }, "load_model",
               {"2 problems", "wrong shape: 'l1.weight'", "wrong dtype: 'bn.num_batches_tracked'"});
  EXPECT_EQ(state_ids(m), ids_before);
}

TEST(ModuleIo, NonStrictLoadsWhatFitsAndReportsTheRest) {
  ScratchDir dir;
  Backbone m;
  io::save_file({{"l1.weight", full(Shape{4, 3}, 7.0)}, {"extra", ones(Shape{2})}}, dir / "part.safetensors");
  const io::LoadReport r = io::load_model(m, dir / "part.safetensors", {.strict = false});
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"l1.weight"}));
  EXPECT_EQ(r.unexpected, (std::vector<std::string>{"extra"}));
  EXPECT_EQ(r.missing.size(), 6u);
  EXPECT_EQ(values_of(m.l1.weight.value()), std::vector<double>(12, 7.0));
}

TEST(ModuleIo, IntegersWidenOnlyWhenAskedAndAValueThatDoesNotFitChangesNothing) {
  ScratchDir dir;
  Backbone m;
  const auto ids_before = state_ids(m);
  auto raw_file = [&](const std::string& name, const std::string& dtype, std::vector<std::byte> count) {
    std::vector<RawTensor> ts;
    for (const nn::NamedTensor& t : m.state_dict())
      if (t.name != "bn.num_batches_tracked")
        ts.push_back({t.name, "F32", t.tensor.shape().to_vector(), raw_bytes(t.tensor.to_vector<float>().get())});
    ts.push_back({"bn.num_batches_tracked", dtype, {}, std::move(count)});
    write_raw_safetensors(dir / name, ts);
    return dir / name;
  };
  const auto i32 = raw_file("i32.safetensors", "I32", raw_bytes(std::vector<std::int32_t>{42}));
  expect_error([&] { return io::load_model(m, i32); }, "load_model",
               {"1 problem", "wrong dtype: 'bn.num_batches_tracked' is I32 in the file, i64 in the module",
                "set convert_dtypes"});
  io::load_model(m, i32, {.convert_dtypes = true});
  EXPECT_EQ(m.bn.num_batches_tracked.get().item<std::int64_t>().get(), 42);

  // A U64 above the i64 range is found while the new values are made, before any is set.
  const auto ids_loaded = state_ids(m);
  const auto u64 = raw_file("u64.safetensors", "U64", raw_bytes(std::vector<std::uint64_t>{1ull << 63}));
  expect_error([&] { return io::load_model(m, u64, {.convert_dtypes = true}); }, "load_model",
               {"u64.safetensors", "'bn.num_batches_tracked'", "does not fit in i64"});
  EXPECT_EQ(state_ids(m), ids_loaded);
  EXPECT_NE(ids_loaded, ids_before);
}

TEST(ModuleIo, LoadedBuffersReachEveryCopyThatSharesThemAsAForwardPassWould) {
  ScratchDir dir;
  Backbone a, b;
  make_distinct(a, 5.0f);
  io::save_model(a, dir / "m.safetensors");
  const Backbone copy = b;  // shares b's buffer cells; its parameters are its own values
  io::load_model(b, dir / "m.safetensors");
  EXPECT_EQ(values_of(copy.bn.running_mean.get()), values_of(a.bn.running_mean.get()));
  EXPECT_NE(values_of(copy.l1.weight.value()), values_of(a.l1.weight.value()));
}

TEST(ModuleIo, SaveOptionsPrefixNamesTheFileAsTheBiggerModelDoes) {
  ScratchDir dir;
  Backbone pretrained;
  make_distinct(pretrained, 6.0f);
  io::save_model(pretrained, dir / "b.safetensors", {.metadata = {{"format", "kiln"}}, .prefix = "backbone."});
  const io::SafeTensorsFile file(dir / "b.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "kiln");
  EXPECT_NE(file.find("backbone.l1.weight"), nullptr);
  Classifier model;
  const io::LoadReport r = io::load_model(model, dir / "b.safetensors", {.strict = false});
  EXPECT_EQ(r.loaded.size(), 7u);
  EXPECT_EQ(r.missing, (std::vector<std::string>{"head.weight", "head.bias"}));
  EXPECT_EQ(state_values(model.backbone), state_values(pretrained));
}

}  // namespace
}  // namespace kiln::test
