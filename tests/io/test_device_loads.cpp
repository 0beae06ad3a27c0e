// Loading onto the module's device: a parameter on a GPU gets its loaded value there, and 16-bit
// float parameters (a Vulkan feature) take f16/bf16 files as they are, or f32 files converted
// when asked; saving them writes what PyTorch's .half() / .bfloat16() wrote. Instantiated for
// every test device (the CPU; Vulkan devices such as lavapipe in CI), the 16-bit cases for those
// that hold 16-bit floats.
#include "io_test_support.h"

namespace kiln::test {
namespace {

class DeviceLoads : public ::testing::TestWithParam<Device> {};

bool holds(Device device, DType t) {
  try {
    (void)zeros(Shape{1}, {t, device});
    return true;
  } catch (const Error&) {
    return false;
  }
}

const Json& device_loads_reference() {
  static const Json ref = load_io_json("torch_reference.json");
  return ref;
}

TEST_P(DeviceLoads, ValuesLoadOntoTheDeviceOfEachTensor) {
  const Device d = GetParam();
  TorchNet net = TorchNet{}.to(d);
  io::load_model(net, io_data("torch_net.safetensors"));
  const Json& tensors = device_loads_reference().at("net").at("tensors");
  for (const nn::NamedTensor& t : net.state_dict()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.tensor.device(), d);
    EXPECT_EQ(values_of(t.tensor), json_numbers(tensors.at(t.name).at("values")));
  }
}

// Only devices that hold 16-bit floats (not the CPU): no case stands in for one it cannot run.
class HalfDeviceLoads : public ::testing::TestWithParam<Device> {};
std::vector<Device> half_devices() {
  std::vector<Device> out;
  for (const Device d : test_devices())
    if (holds(d, DType::f16) && holds(d, DType::bf16)) out.push_back(d);
  return out;
}

TEST_P(HalfDeviceLoads, HalfPrecisionParametersTakeHalfPrecisionFiles) {
  const Device d = GetParam();
  for (const DType half : {DType::f16, DType::bf16}) {
    const std::string kind = dtype_name(half);
    SCOPED_TRACE(kind);
    const auto to_half = [&](const std::string&, const Tensor& v) {
      return is_floating(v.dtype()) ? cast(v, half) : v;
    };
    auto half_net = [&] {
      TorchNet net = TorchNet{}.to(d);
      net.map_parameters_in_place(to_half);
      net.map_buffers_in_place(to_half);
      return net;
    };
    const Json& want = device_loads_reference().at("net_" + kind).at("tensors");
    const auto expect_values = [&](const TorchNet& net) {
      for (const nn::NamedTensor& t : net.state_dict()) {
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.tensor.device(), d);
        EXPECT_EQ(t.tensor.dtype(), t.name == "bn.num_batches_tracked" ? DType::i64 : half);
        EXPECT_TRUE(same_bits(host_values(t.tensor), json_numbers(want.at(t.name).at("values"))));
      }
    };
    const std::string file = "torch_net_" + kind + ".safetensors";

    TorchNet direct = half_net();
    io::load_model(direct, io_data(file));  // the file's dtype is the module's: no conversion
    expect_values(direct);

    TorchNet converted = half_net();
    expect_error([&] { return io::load_model(converted, io_data("torch_net.safetensors")); }, "load_model",
                 {"10 problems", "wrong dtype: 'fc.weight' is F32 in the file, " + kind + " in the module"});
    io::load_model(converted, io_data("torch_net.safetensors"), {.convert_dtypes = true});
    expect_values(converted);

    ScratchDir dir;
    io::save_model(direct, dir / file);
    EXPECT_EQ(file_bytes(dir / file), file_bytes(io_data(file)));
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceLoads, ::testing::ValuesIn(test_devices()), device_param_name);
INSTANTIATE_TEST_SUITE_P(Devices, HalfDeviceLoads, ::testing::ValuesIn(half_devices()), device_param_name);
// A build without a GPU device has none to instantiate it with.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HalfDeviceLoads);

}  // namespace
}  // namespace kiln::test
