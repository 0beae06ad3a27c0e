// Files written from PyTorch (tests/data/gen_io_torch.py, with a faithful hand implementation of
// safetensors' serialize) load into the kiln twin of the model with PyTorch's values, the model
// then computes PyTorch's outputs, and kiln writes the same bytes back.
#include "io_test_support.h"

namespace kiln::test {
namespace {

const Json& torch_files_reference() {
  static const Json ref = load_io_json("torch_reference.json");
  return ref;
}

// The module's state_dict against the reference tensors, value for value (exact: the bytes are copied).
void expect_state_matches(const nn::Module& m, const Json& tensors) {
  const std::vector<nn::NamedTensor> state = m.state_dict();
  ASSERT_EQ(state.size(), tensors.size());
  for (const nn::NamedTensor& t : state) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(tensors.contains(t.name));
    const Json& want = tensors.at(t.name);
    EXPECT_EQ(t.tensor.shape(), json_dims(want.at("shape")));
    EXPECT_EQ(values_of(t.tensor), json_numbers(want.at("values")));
  }
}

TEST(TorchFiles, StateDictNamesAndOrderAreTorchs) {
  TorchNet net;
  std::vector<std::string> names;
  for (const nn::NamedTensor& t : net.state_dict()) names.push_back(t.name);
  EXPECT_EQ(names, torch_files_reference().at("net").at("state_dict_order").get<std::vector<std::string>>());
}

TEST(TorchFiles, AStateDictFromPyTorchLoadsWithItsValues) {
  TorchNet net;
  const io::LoadReport report = io::load_model(net, io_data("torch_net.safetensors"));
  EXPECT_EQ(report.loaded.size(), 11u);
  EXPECT_TRUE(report.missing.empty());
  EXPECT_TRUE(report.unexpected.empty());
  expect_state_matches(net, torch_files_reference().at("net").at("tensors"));
  EXPECT_EQ(net.bn.num_batches_tracked.get().dtype(), DType::i64);
  EXPECT_EQ(net.bn.num_batches_tracked.get().item<std::int64_t>().get(), 3);
  EXPECT_TRUE(net.fc.weight.trainable());
}

TEST(TorchFiles, TheLoadedModelComputesPyTorchsOutputs) {
  TorchNet net;
  io::load_model(net, io_data("torch_net.safetensors"));
  net.eval();
  const Json& fwd = torch_files_reference().at("forward");
  const auto input = [&](const char* layer) {
    const Json& x = fwd.at(layer).at("input");
    const std::vector<double> v = json_numbers(x.at("values"));
    return from_vector(std::vector<float>(v.begin(), v.end()), json_dims(x.at("shape")));
  };
  const auto expect_output = [&](const char* layer, const Tensor& y) {
    SCOPED_TRACE(layer);
    const Json& want = fwd.at(layer).at("output");
    EXPECT_EQ(y.shape(), json_dims(want.at("shape")));
    EXPECT_TRUE(values_close(values_of(y), json_numbers(want.at("values")), {1e-5, 1e-5}));
  };
  expect_output("conv", net.conv(input("conv")));
  expect_output("bn", net.bn(input("bn")));
  expect_output("fc", net.fc(input("fc")));
  expect_output("head", net.head(input("head")));
}

TEST(TorchFiles, KilnWritesTheSameBytesAsTheSafetensorsLibrary) {
  ScratchDir dir;
  TorchNet net;
  io::load_model(net, io_data("torch_net.safetensors"));
  io::save_model(net, dir / "net.safetensors");
  EXPECT_EQ(file_bytes(dir / "net.safetensors"), file_bytes(io_data("torch_net.safetensors")));
}

TEST(TorchFiles, HalfPrecisionFilesLoadIntoF32OnlyWhenAsked) {
  for (const std::string kind : {"f16", "bf16"}) {
    SCOPED_TRACE(kind);
    const std::filesystem::path path = io_data("torch_net_" + kind + ".safetensors");
    TorchNet net;
    const Tensor before = net.fc.weight.value();
    const std::string stored = kind == "f16" ? "F16" : "BF16";
    // Ten float tensors: all reported at once; num_batches_tracked (I64) is fine.
    expect_error([&] { return io::load_model(net, path); }, "load_model",
                 {path.filename().string(), "10 problems", "nothing was loaded",
                  "wrong dtype: 'conv.weight' is " + stored + " in the file, f32 in the module",
                  "wrong dtype: 'head.0.bias'", "set convert_dtypes"});
    EXPECT_EQ(net.fc.weight.value().id(), before.id());

    io::load_model(net, path, {.convert_dtypes = true});
    expect_state_matches(net, torch_files_reference().at("net_" + kind).at("tensors"));
    EXPECT_EQ(net.conv.weight.value().dtype(), DType::f32);
  }
}

TEST(TorchFiles, SavingAsHalfPrecisionMatchesPyTorchsConversion) {
  ScratchDir dir;
  TorchNet net;
  io::load_model(net, io_data("torch_net.safetensors"));
  io::save_model(net, dir / "f16.safetensors", {.float_dtype = DType::f16});
  io::save_model(net, dir / "bf16.safetensors", {.float_dtype = DType::bf16});
  EXPECT_EQ(file_bytes(dir / "f16.safetensors"), file_bytes(io_data("torch_net_f16.safetensors")));
  EXPECT_EQ(file_bytes(dir / "bf16.safetensors"), file_bytes(io_data("torch_net_bf16.safetensors")));
}

TEST(TorchFiles, EveryDtypeReadsAsTorchDoes) {
  const io::SafeTensorsFile file(io_data("torch_dtypes.safetensors"));
  const Json& tensors = torch_files_reference().at("dtypes").at("tensors");
  ASSERT_EQ(file.tensors().size(), tensors.size());
  EXPECT_EQ(file.metadata().at("written_by"), "gen_io_torch.py");
  for (const io::TensorInfo& t : file.tensors()) {
    SCOPED_TRACE(t.name);
    const Json& want = tensors.at(t.name);
    EXPECT_EQ(io::file_dtype_name(t.dtype), want.at("dtype").get<std::string>());
    EXPECT_EQ(t.shape, want.at("shape").get<std::vector<std::int64_t>>());
  }
  // Dtypes kiln holds on the CPU load as they are.
  EXPECT_EQ(values_of(file.tensor("f32")), json_numbers(tensors.at("f32").at("values")));
  EXPECT_EQ(file.tensor("i64").to_vector<std::int64_t>().get(),
            tensors.at("i64").at("values").get<std::vector<std::int64_t>>());
  EXPECT_EQ(values_of(file.tensor("bool")), json_numbers(tensors.at("bool").at("values")));
  EXPECT_EQ(file.tensor("scalar").shape(), Shape{});
  EXPECT_EQ(file.tensor("empty").shape(), (Shape{0, 3}));

  // Others need the conversion asked for, and then read as torch's .float() / .long() do.
  expect_error([&] { return file.tensor("f64"); }, "SafeTensorsFile::tensor",
               {"torch_dtypes.safetensors", "'f64'", "kiln has no dtype for F64", "float_dtype"});
  expect_error([&] { return file.tensor("i32"); }, "SafeTensorsFile::tensor",
               {"'i32'", "kiln has no dtype for I32", "widen_integers"});
  expect_error([&] { return file.tensor("f16"); }, "SafeTensorsFile::tensor",
               {"'f16'", "f16 is not supported on cpu", "conversion to f32"});
  for (const auto& [name, values] : torch_files_reference().at("dtypes_as_f32").items()) {
    SCOPED_TRACE(name);
    const Tensor t = file.tensor(name, {.float_dtype = DType::f32});
    EXPECT_EQ(t.dtype(), DType::f32);
    EXPECT_TRUE(same_bits(values_of(t), json_numbers(values)));
  }
  for (const auto& [name, values] : torch_files_reference().at("dtypes_as_i64").items()) {
    SCOPED_TRACE(name);
    const Tensor t = file.tensor(name, {.widen_integers = true});
    EXPECT_EQ(t.to_vector<std::int64_t>().get(), values.get<std::vector<std::int64_t>>());
  }
}

}  // namespace
}  // namespace kiln::test
