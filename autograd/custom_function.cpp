// custom_function: one graph node whose backward is a function of the caller's instead of a
// rule from the table (see autograd.h). The node is built as begin_record/finish_record build
// one for an op: edges from the inputs' places in the graph, the shapes and dtypes of inputs
// and outputs (backward checks the returned gradients against them), graph handles for outputs.
#include "kiln/autograd/graph.h"

namespace kiln {

namespace {

TensorIr meta_of(const Tensor& t) { return TensorIr{t.id(), t.shape(), t.dtype(), TensorStatus::ReadOnly}; }

}  // namespace

std::vector<Tensor> custom_function(const std::vector<Tensor>& inputs, const CustomForward& forward,
                                    CustomBackward backward, const std::string& name) {
  KILN_CHECK(forward && backward, name, "custom_function needs both a forward and a backward");
  KILN_CHECK(!inputs.empty(), name, "custom_function needs at least one input");
  bool any_requires = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    KILN_CHECK(inputs[i].defined(), name, "input #" + std::to_string(i) + " is undefined");
    any_requires |= requires_grad(inputs[i]);
  }
  if (!grad_enabled() || !any_requires) return forward(inputs);

  std::vector<Tensor> outputs;
  {
    // forward sees the inputs outside the graph: nothing it does is recorded.
    std::vector<Tensor> plain;
    plain.reserve(inputs.size());
    for (const Tensor& t : inputs) plain.push_back(detach(t));
    NoGradGuard no_grad;
    outputs = forward(plain);
  }
  KILN_CHECK(!outputs.empty(), name, "the forward function returned no outputs");

  auto node = std::make_shared<detail::GradNode>();
  node->custom_backward = std::move(backward);
  node->custom_name = name;
  node->device = inputs[0].device();
  node->edges.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    node->fwd.input_meta.push_back(meta_of(inputs[i]));
    node->edges[i] = detail::edge_to(inputs[i]);
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    KILN_CHECK(outputs[o].defined(), name, "the forward function's output #" + std::to_string(o) + " is undefined");
    node->fwd.output_meta.push_back(meta_of(outputs[o]));
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (!is_floating(outputs[o].dtype())) continue;  // integer outputs take no gradient
    auto meta = std::make_shared<detail::AutogradMeta>();
    meta->node = node;
    meta->output = static_cast<std::uint32_t>(o);
    outputs[o] = detail::graph_handle(outputs[o], std::move(meta));
  }
  return outputs;
}

}  // namespace kiln
