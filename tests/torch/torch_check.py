"""PyTorch on braid's libnccl.so.2: collectives through torch.distributed and a few DDP steps.

Run under torchrun with braid's library loaded ahead of the NCCL PyTorch ships:

    LD_PRELOAD=build/libnccl.so.2 torchrun --nproc_per_node 2 tests/torch/torch_check.py
    torchrun --nproc_per_node 2 tests/torch/torch_check.py          # the same with NCCL, to compare

Each check compares against a value computed in the script. The DDP part trains a small model for a
300 steps (bucket_cap_mb=25) with a fixed seed and prints the losses. The same command without LD_PRELOAD prints NCCL's
losses, and the two runs must agree to rounding. Rank 0 prints "torch_check: OK" at the end, and
which library ran (the NCCL version torch reports, and whether braid's symbols are loaded).
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


def check(name, ok):
    if not ok:
        print(f"rank {dist.get_rank()}: {name}: WRONG", flush=True)
        sys.exit(1)


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, n = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", local)
    with open("/proc/self/maps") as maps:
        nccl_files = sorted({line.split()[-1] for line in maps if "libnccl.so" in line})

    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32):
        for numel in (1, 1023, (1 << 20) + 3):
            x = torch.full((numel,), rank + 1, dtype=dtype, device=dev)
            dist.all_reduce(x)
            check(f"all_reduce {dtype} {numel}", bool((x == n * (n + 1) // 2).all()))
            y = torch.full((numel,), rank + 1, dtype=dtype, device=dev)
            dist.all_reduce(y, op=dist.ReduceOp.MAX)
            check(f"all_reduce max {dtype} {numel}", bool((y == n).all()))
    b = torch.arange(4097, device=dev, dtype=torch.float32) * (rank + 1)
    dist.broadcast(b, src=n - 1)
    check("broadcast", bool((b == torch.arange(4097, device=dev, dtype=torch.float32) * n).all()))
    parts = [torch.empty(1000, device=dev) for _ in range(n)]
    dist.all_gather(parts, torch.full((1000,), float(rank), device=dev))
    check("all_gather", all(bool((p == q).all()) for q, p in enumerate(parts)))
    out = torch.empty(1000, device=dev)
    dist.reduce_scatter(out, [torch.full((1000,), float(q + rank), device=dev) for q in range(n)])
    check("reduce_scatter", bool((out == sum(rank + q for q in range(n))).all()))
    flat = torch.empty(n * 777, device=dev)
    dist.all_gather_into_tensor(flat, torch.full((777,), float(rank), device=dev))
    check("all_gather_into_tensor", bool((flat == torch.arange(n, device=dev).repeat_interleave(777)).all()))
    rs = torch.empty(555, device=dev)
    dist.reduce_scatter_tensor(rs, torch.arange(n * 555, device=dev, dtype=torch.float32) * (rank + 1))
    want_rs = torch.arange(rank * 555, rank * 555 + 555, device=dev, dtype=torch.float32) * (n * (n + 1) // 2)
    check("reduce_scatter_tensor", bool((rs == want_rs).all()))
    a2a = torch.empty(n * 100, device=dev)
    dist.all_to_all_single(a2a, torch.arange(n * 100, device=dev, dtype=torch.float32) + 1000 * rank)
    want = torch.cat([torch.arange(rank * 100, rank * 100 + 100, device=dev, dtype=torch.float32) + 1000 * q
                      for q in range(n)])
    check("all_to_all_single", bool((a2a == want).all()))
    if n > 1:
        s = torch.full((333,), float(rank), device=dev)
        r = torch.empty(333, device=dev)
        ops = [dist.P2POp(dist.isend, s, (rank + 1) % n), dist.P2POp(dist.irecv, r, (rank - 1) % n)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        check("send/recv", bool((r == float((rank - 1) % n)).all()))
    dist.barrier()

    # The kernel names the profiler shows for one all-reduce.
    x = torch.ones(1 << 20, device=dev)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        dist.all_reduce(x)
        torch.cuda.synchronize()
    kernels = sorted({e.name for e in prof.events() if "braid" in e.name or "nccl" in e.name.lower()})

    # DDP: the same seed on every rank, different data per rank, 300 steps; print the losses.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 256)).to(dev)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[local], bucket_cap_mb=25)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator(device="cpu").manual_seed(100 + rank)
    losses = []
    for _ in range(300):
        xb = torch.randn(64, 256, generator=gen).to(dev)
        loss = ((ddp(xb) - xb) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t)
        losses.append(t.item() / n)
    # Every rank's parameters must stay identical after the steps.
    for p in ddp.parameters():
        ref = p.detach().clone()
        dist.broadcast(ref, src=0)
        check("DDP parameters in sync", bool(torch.equal(ref, p.detach())))
    torch.cuda.synchronize()
    if rank == 0:
        print("torch_check: libnccl loaded from", ", ".join(nccl_files), "version", torch.cuda.nccl.version())
        print("torch_check: all-reduce kernels in the profiler:", ", ".join(kernels))
        print("torch_check: DDP losses", " ".join(f"{v:.6f}" for v in losses))
        print("torch_check: OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
