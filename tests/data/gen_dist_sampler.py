"""Reference shards of torch.utils.data.DistributedSampler (shuffle=False: PyTorch's own
shuffle draws from torch.randperm, which kiln's counter-based order does not reproduce, so the
shuffled shards are checked by their properties instead). Run with the python that has torch:
    python3 tests/data/gen_dist_sampler.py  ->  tests/data/dist_sampler.json
"""
import json
import os

from torch.utils.data import DistributedSampler

cases = []
for size, world, drop_last in [(10, 3, False), (10, 3, True), (8, 4, False), (7, 2, False), (2, 4, False), (9, 2, True)]:
    shards = [list(DistributedSampler(range(size), num_replicas=world, rank=r, shuffle=False, drop_last=drop_last))
              for r in range(world)]
    cases.append({"size": size, "world": world, "drop_last": drop_last, "shards": shards})

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_sampler.json"), "w") as f:
    json.dump(cases, f, indent=1)
