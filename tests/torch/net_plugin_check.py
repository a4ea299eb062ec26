"""NCCL itself (the one PyTorch ships) running over braid's socket network, loaded as a net plugin.

Two processes share one GPU and count as two hosts (distinct NCCL_HOSTID), so NCCL moves every byte
between them through its network layer, which NCCL_NET_PLUGIN points at braid's libnccl-net-braid.so:

    python3 tests/torch/net_plugin_check.py build/libnccl-net-braid.so

Each process checks all_reduce, all_gather and broadcast against values computed here, at sizes
from one element to 16 M. NCCL's INFO log (NCCL_DEBUG_SUBSYS=INIT,NET) goes to stderr so that the
caller can see which network NCCL chose. Prints "net_plugin_check: OK" when both ranks pass.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def check(rank, name, ok):
    if not ok:
        print(f"rank {rank}: {name}: WRONG", flush=True)
        sys.exit(1)


def worker(rank, world, plugin, port):
    os.environ.update({
        "NCCL_NET_PLUGIN": plugin,
        "NCCL_HOSTID": f"braid-net-check-host-{rank}",
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET",
        "NCCL_IB_DISABLE": "1",
        "NCCL_NVLS_ENABLE": "0",
    })
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=dev)
    for numel in (1, 1023, (1 << 20) + 3, 16 << 20):
        x = torch.full((numel,), float(rank + 1), device=dev)
        dist.all_reduce(x)
        check(rank, f"all_reduce {numel}", bool((x == world * (world + 1) / 2).all()))
        y = torch.arange(numel, dtype=torch.int32, device=dev) + rank
        out = torch.empty(world * numel, dtype=torch.int32, device=dev)
        dist.all_gather_into_tensor(out, y)
        want = torch.cat([torch.arange(numel, dtype=torch.int32, device=dev) + r for r in range(world)])
        check(rank, f"all_gather {numel}", bool(torch.equal(out, want)))
        z = torch.full((numel,), float(rank * 10 + 3), device=dev)
        dist.broadcast(z, src=world - 1)
        check(rank, f"broadcast {numel}", bool((z == (world - 1) * 10 + 3).all()))
    torch.cuda.synchronize()
    if rank == 0:
        print(f"net_plugin_check: OK (torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, "
              f"NCCL_NET_PLUGIN={plugin})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    plugin = os.path.abspath(sys.argv[1])
    port = 29000 + os.getpid() % 1000
    mp.spawn(worker, args=(2, plugin, port), nprocs=2, join=True)
