"""PyTorch baseline for bench/dist: DistributedDataParallel over gloo (what a torchrun user gets
on CPU), the model and loss of bench/train/torch_train.py, each rank on its B/N rows of the same
batch, torch.optim.AdamW and clip_grad_norm_ on every rank. Rank 0 prints one JSON line.
Usage: /usr/bin/python3 torch_ddp_train.py tiny|small|qwen05 steps ranks threads"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
from torch_train import SHAPES, Model  # noqa: E402


def worker(rank, n, which, steps, threads, port, out):
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    torch.manual_seed(0)
    c, layers, nh, nkv, inter, vocab, b, t, tie = SHAPES[which]
    model = torch.nn.parallel.DistributedDataParallel(Model(c, layers, nh, nkv, inter, vocab, tie))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)
    ids = torch.randint(0, vocab, (b, t))[rank * b // n:(rank + 1) * b // n]

    def step():
        opt.zero_grad()
        model(ids).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step()
    dist.barrier()
    t0 = time.time()
    for _ in range(steps):
        step()
    dist.barrier()
    sec = (time.time() - t0) / steps
    if rank == 0:
        out.put({"impl": "pytorch-ddp", "shape": which, "ranks": n, "threads": threads, "torch": torch.__version__,
                 "tokens_per_s": round(b * t / sec, 1), "step_s": round(sec, 3)})
    dist.destroy_process_group()


def main():
    which, steps = sys.argv[1], int(sys.argv[2])
    n, threads = int(sys.argv[3]), int(sys.argv[4])
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=worker, args=(r, n, which, steps, threads, port, q)) for r in range(n)]
    for p in procs:
        p.start()
    res = q.get()
    for p in procs:
        p.join()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
