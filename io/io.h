// kiln::io: weight files and checkpoints. Files are safetensors (the format PyTorch and Hugging
// Face share), named with PyTorch's state_dict paths, so weights move between kiln and PyTorch
// both ways. Every file read is untrusted input: it is checked in full before use, and any
// problem is a kiln::Error naming the file and the tensor.
//
//   SafeTensorsFile, load_file, save_file  — named tensors (safetensors_file.h, safetensors_writer.h)
//   save_model, load_model                 — a module's parameters and buffers (module_io.h)
//   save_state, load_state                 — an optimizer's or scheduler's optim::State (state_io.h)
//   save_checkpoint, load_checkpoint       — all of a run in one file, written atomically (checkpoint.h)
#pragma once

#include "kiln/io/checkpoint.h"
#include "kiln/io/module_io.h"
#include "kiln/io/safetensors_file.h"
#include "kiln/io/safetensors_header.h"
#include "kiln/io/safetensors_writer.h"
#include "kiln/io/state_io.h"
