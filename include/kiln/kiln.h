// Everything kiln offers, in one include: what a program linked to kiln::kiln may use.
// A program that needs less includes the layer's own header (<kiln/core.h>, <kiln/nn.h>, ...).
#pragma once
#include "kiln/core.h"
#include "kiln/data.h"
#include "kiln/dist.h"
#include "kiln/io.h"
#include "kiln/nn.h"
#include "kiln/onnx.h"
#include "kiln/optim.h"
#include "kiln/serve.h"
#include "kiln/train.h"
