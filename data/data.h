// kiln's data pipeline: datasets of host items, transforms, and a loader whose worker threads
// turn them into batches of tensors on a device (torch.utils.data, Burn's burn::data).
//
//   Dataset<Item>  — size() and get(index); in_memory, lazy, concat, subset, shuffled,
//                    random_split, windows, map (a transform on access)
//   Example, Batch — an input with its label or target; the tensors of a batch (stack_examples)
//   transforms     — Normalize, RandomCrop, RandomHorizontalFlip, OneHot, compose, any function
//   DataLoader     — batches in an order fixed by (seed, epoch), built ahead by worker threads
//   readers        — IDX files (MNIST, Fashion-MNIST), gzipped or not; CSV files
//
//   auto train = data::map(data::fashion_mnist(data::Split::train),
//                          data::compose(data::RandomCrop{28, 4}, data::RandomHorizontalFlip{}));
//   data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 7, .workers = 2});
//   for (data::Batch& b : loader.epoch(0)) model_step(b.inputs, b.labels);
#pragma once

#include "kiln/data/composed.h"
#include "kiln/data/csv.h"
#include "kiln/data/dataset.h"
#include "kiln/data/example.h"
#include "kiln/data/idx.h"
#include "kiln/data/loader.h"
#include "kiln/data/mapped.h"
#include "kiln/data/mnist.h"
#include "kiln/data/random.h"
#include "kiln/data/transforms.h"
