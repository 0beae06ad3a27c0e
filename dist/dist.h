// kiln dist: training on several processes (on one machine or many) that each run the same
// program. A process group (rank, world size, collectives on tensors over Gloo), replicated
// models with gradients averaged in buckets while backward runs (PyTorch's DDP), and the
// distributed sampler that gives each rank its shard of every epoch. kiln-launch starts the
// processes; the README's "Data-parallel training" section shows a whole program.
#pragma once
#include "kiln/dist/collective.h"
#include "kiln/dist/data_parallel.h"
#include "kiln/dist/distributed_sampler.h"
#include "kiln/dist/learner_hooks.h"
#include "kiln/dist/process_group.h"
#include "kiln/dist/sync_batch_norm.h"
