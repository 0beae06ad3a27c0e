// Recurrent ONNX ops (LSTM, GRU, RNN): not yet; the table stays empty so that files using them
// are reported as unsupported at load.
#include "kiln/onnx/op_registry.h"

namespace kiln::onnx::detail {

void add_rnn_ops(OpTable&) {}

}  // namespace kiln::onnx::detail
