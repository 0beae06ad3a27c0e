"""Reference of dist::SyncBatchNorm for tests/dist/test_sync_batch_norm.cpp: PyTorch's
BatchNorm2d in training mode on the whole batch, which SyncBatchNorm on ranks that each hold a
part of the batch must reproduce (outputs and input gradients row for row, parameter gradients
summed over the ranks, the running statistics).

    /usr/bin/python3 tests/data/gen_sync_batch_norm.py   # writes sync_batch_norm.json

Layout: tests/data/refgen.py. One case per op:
  sync_batch_norm: inputs x [8, 3, 4, 4], weight, bias, running_mean, running_var (before),
                   seed (the loss is sum(y * seed)); outputs y, dx, dweight, dbias, then the
                   running mean and variance after one step; attrs momentum, eps.
"""
import torch

from refgen import case, write

torch.manual_seed(0)
momentum, eps = 0.1, 1e-5
x = (torch.randn(8, 3, 4, 4) * 1.5 + 0.5).float().requires_grad_()
bn = torch.nn.BatchNorm2d(3, eps=eps, momentum=momentum)
with torch.no_grad():
    bn.weight.copy_(torch.randn(3))
    bn.bias.copy_(torch.randn(3))
    bn.running_mean.copy_(torch.randn(3))
    bn.running_var.copy_(torch.rand(3) + 0.5)
inputs = [x, bn.weight, bn.bias, bn.running_mean.clone(), bn.running_var.clone()]
seed = torch.randn(8, 3, 4, 4)
bn.train()
y = bn(x)
(y * seed).sum().backward()
write("sync_batch_norm", [
    case("sync_batch_norm", "sync_batch_norm", inputs + [seed],
         [y, x.grad, bn.weight.grad, bn.bias.grad, bn.running_mean, bn.running_var],
         attrs=dict(momentum=momentum, eps=eps)),
])
