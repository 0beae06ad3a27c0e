// The Learner, its metrics, checkpoints, dashboard and HTML report (kiln_train).
#pragma once
#include "kiln/train/html_report.h"
#include "kiln/train/learner.h"
