// ONNX models loaded at run time as modules (run, fine-tune) and kiln passes exported as ONNX files (kiln_onnx).
#pragma once
#include "kiln/onnx/onnx.h"
#include "kiln/onnx/export.h"
