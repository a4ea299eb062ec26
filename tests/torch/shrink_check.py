"""PyTorch on braid's libnccl.so.2: one rank dies, the survivors shrink the group (ncclCommShrink
underneath) and go on all-reducing on the new group.

    LD_PRELOAD=build/libnccl.so.2 torchrun --nproc_per_node 3 tests/torch/shrink_check.py

Ranks share the GPUs there are (rank r on GPU r % count; braid allows ranks to share one). Rank 1
is killed with SIGKILL after the first all-reduce (no teardown, no word to anyone); the others call
torch.distributed.distributed_c10d.shrink_group([1]) and check three all-reduces on the new group
against the sum of their own values. Rank 0 prints "shrink_check: OK", or "shrink_check: SKIPPED"
when this PyTorch has no shrink_group.

torchrun stops every worker as soon as one ends with a failure, so rank 1's worker process forks
before it touches CUDA: the child is the rank (it joins the group, all-reduces, and is killed), the
parent only waits for it and ends with status 0 when the child died of SIGKILL (status 1 otherwise).
"""
import inspect
import os
import signal
import sys

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

VICTIM = 1


def main():
    local = int(os.environ["LOCAL_RANK"])
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rank, n = dist.get_rank(), dist.get_world_size()
    with open("/proc/self/maps") as maps:
        nccl_files = sorted({line.split()[-1] for line in maps if "libnccl.so" in line})
    shrink = getattr(c10d, "shrink_group", None)
    if shrink is None:
        if rank == 0:
            print("shrink_check: SKIPPED (this PyTorch has no distributed_c10d.shrink_group)", flush=True)
        dist.destroy_process_group()
        return 0
    if rank == 0:
        print(f"shrink_check: shrink_group{inspect.signature(shrink)}", flush=True)
    x = torch.full((1 << 16,), float(rank + 1), device=dev)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    if not bool((x == n * (n + 1) / 2).all()):
        print(f"rank {rank}: first all_reduce WRONG", flush=True)
        return 1
    if rank == VICTIM:
        print(f"rank {rank}: killed (SIGKILL)", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    group = shrink([VICTIM])
    want = n * (n + 1) / 2 - (VICTIM + 1)
    for numel in (1, 4097, (1 << 20) + 3):
        y = torch.full((numel,), float(rank + 1), device=dev)
        dist.all_reduce(y, group=group)
        torch.cuda.synchronize()
        if not bool((y == want).all()):
            print(f"rank {rank}: all_reduce of {numel} on the shrunk group WRONG: {y[:4].tolist()}, want {want}",
                  flush=True)
            return 1
    if rank == 0:
        print(f"shrink_check: OK ({dist.get_world_size(group)} ranks after shrinking {n}; "
              f"NCCL version {torch.cuda.nccl.version()}; loaded: {', '.join(nccl_files)})", flush=True)
    os._exit(0)  # the parent group holds the dead rank: leave without a collective teardown


def victim_worker():
    """Rank VICTIM's torchrun worker: the rank is a child process, killed by SIGKILL in main()."""
    child = os.fork()
    if child == 0:
        os._exit(main())  # never returns normally: main() kills this process
    _, status = os.waitpid(child, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    print(f"rank {VICTIM}'s worker: the rank {'was killed by SIGKILL' if killed else f'ended with status {status}'}",
          flush=True)
    return 0 if killed else 1


if __name__ == "__main__":
    sys.exit(victim_worker() if int(os.environ["RANK"]) == VICTIM else main())
