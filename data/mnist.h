// The MNIST family (MNIST, Fashion-MNIST, KMNIST): u8 images [n, rows, cols] and u8 labels [n]
// in IDX files, gzipped or not. Items are Examples of shape [1, rows, cols] with values in
// [0, 1] (pixel / 255, as torchvision's ToTensor) and the label, decoded on access.
//
//   auto train = data::fashion_mnist(data::Split::train);   // Debian's dataset-fashion-mnist
//   auto test = data::mnist_dataset("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz");
#pragma once
#include <filesystem>

#include "kiln/data/dataset.h"
#include "kiln/data/example.h"

namespace kiln::data {

enum class Split { train, test };

// Checks both files (magic 0x00000803 for images, 0x00000801 for labels), that they hold as
// many images as labels, and that every label is a class (0 to classes - 1: the family has 10);
// throws kiln::Error("mnist_dataset", ...) naming the file (and the record) otherwise.
DatasetPtr<Example> mnist_dataset(const std::filesystem::path& images, const std::filesystem::path& labels,
                                  std::int64_t classes = 10);

// The files of a split in `root` under their usual names ({train,t10k}-images-idx3-ubyte and
// {train,t10k}-labels-idx1-ubyte), gzipped (.gz) or not.
DatasetPtr<Example> mnist_split(const std::filesystem::path& root, Split split);

// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST.
inline const std::filesystem::path kDebianFashionMnist = "/usr/share/datasets/fashion-mnist";

DatasetPtr<Example> fashion_mnist(Split split, const std::filesystem::path& root = kDebianFashionMnist);

}  // namespace kiln::data
