// Weights and checkpoints in safetensors files (kiln_io).
#pragma once
#include "kiln/io/io.h"
