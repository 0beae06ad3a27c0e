// Datasets, transforms and the data loader (kiln_data).
#pragma once
#include "kiln/data/data.h"
