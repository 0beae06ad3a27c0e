#include "kiln/data/mnist.h"

#include <memory>
#include <string>

#include "kiln/data/idx.h"

namespace kiln::data {

namespace {

constexpr const char* kMnistOp = "mnist_dataset";

// The file of one part of a split: `stem` with .gz when that exists, else without.
std::filesystem::path find_part(const std::filesystem::path& root, const std::string& stem, const char* op,
                                const char* hint) {
  for (const char* suffix : {".gz", ""}) {
    const std::filesystem::path candidate = root / (stem + suffix);
    if (std::filesystem::exists(candidate)) return candidate;
  }
  throw Error(op, (root / stem).string() + "[.gz]: no such file" + hint);
}

DatasetPtr<Example> split_in(const std::filesystem::path& root, Split split, const char* op, const char* hint) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const std::filesystem::path images = find_part(root, prefix + "-images-idx3-ubyte", op, hint);
  const std::filesystem::path labels = find_part(root, prefix + "-labels-idx1-ubyte", op, hint);
  return mnist_dataset(images, labels);
}

// Rethrows a reader's error under `op`, keeping its message (which names the file).
template <class F>
auto as(const char* op, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.op() == op) throw;
    throw Error(op, e.what());
  }
}

}  // namespace

DatasetPtr<Example> mnist_dataset(const std::filesystem::path& images_path, const std::filesystem::path& labels_path,
                                  std::int64_t classes) {
  KILN_CHECK(classes > 0, kMnistOp, "classes must be positive, got " + std::to_string(classes));
  auto images = std::make_shared<const IdxFile>(as(kMnistOp, [&] { return IdxFile(images_path); }));
  auto labels = std::make_shared<const IdxFile>(as(kMnistOp, [&] { return IdxFile(labels_path); }));
  KILN_CHECK(images->type() == IdxType::u8 && images->dims().size() == 3, kMnistOp,
             images_path.string() + ": expected u8 images [n, rows, cols] (magic 0x00000803), got " +
                 std::to_string(images->dims().size()) + " dimensions of " + idx_type_name(images->type()));
  KILN_CHECK(labels->type() == IdxType::u8 && labels->dims().size() == 1, kMnistOp,
             labels_path.string() + ": expected u8 labels [n] (magic 0x00000801), got " +
                 std::to_string(labels->dims().size()) + " dimensions of " + idx_type_name(labels->type()));
  KILN_CHECK(images->records() == labels->records(), kMnistOp,
             "counts disagree: " + std::to_string(images->records()) + " images in " + images_path.string() + " but " +
                 std::to_string(labels->records()) + " labels in " + labels_path.string());
  // A label outside the classes would otherwise surface only deep inside the loss, as an index
  // out of range of a gather, with no file to look at.
  for (std::int64_t i = 0; i < labels->records(); ++i) {
    const std::int64_t label = labels->scalar_int(i);
    KILN_CHECK(label >= 0 && label < classes, kMnistOp,
               labels_path.string() + ": label " + std::to_string(label) + " of record " + std::to_string(i) +
                   " is not one of the " + std::to_string(classes) + " classes (0 to " + std::to_string(classes - 1) +
                   ")");
  }
  const Shape shape{1, images->dims()[1], images->dims()[2]};
  return lazy(images->records(), [images, labels, shape](std::int64_t i) {
    Example e;
    e.features = images->record_floats(i);
    for (float& v : e.features) v /= 255.0f;
    e.shape = shape;
    e.label = labels->scalar_int(i);
    return e;
  });
}

DatasetPtr<Example> mnist_split(const std::filesystem::path& root, Split split) {
  return split_in(root, split, "mnist_split", "");
}

DatasetPtr<Example> fashion_mnist(Split split, const std::filesystem::path& root) {
  const char* hint = root == kDebianFashionMnist ? " (Debian's dataset-fashion-mnist package installs it)" : "";
  return split_in(root, split, "fashion_mnist", hint);
}

}  // namespace kiln::data
