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

#include "data/composed.h"
#include "data/csv.h"
#include "data/dataset.h"
#include "data/example.h"
#include "data/idx.h"
#include "data/loader.h"
#include "data/mapped.h"
#include "data/mnist.h"
#include "data/random.h"
#include "data/transforms.h"
