// ONNX models loaded at run time as modules: run, fine-tune (kiln_onnx).
#pragma once
#include "kiln/onnx/onnx.h"
