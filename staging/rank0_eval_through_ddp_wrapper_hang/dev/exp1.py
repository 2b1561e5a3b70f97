import os, sys, time, datetime, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
MODE = sys.argv[1]; PORT = int(sys.argv[2])
def run(rank, world):
    os.environ["GLOO_SOCKET_IFNAME"]="lo"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{PORT}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=6))
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8,16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16,3))
    d = DDP(m)
    opt = torch.optim.SGD(d.parameters(), lr=0.1)
    for s in range(3):
        x = torch.randn(16,8); y = torch.randint(0,3,(16,))
        loss = torch.nn.functional.cross_entropy(d(x), y); opt.zero_grad(); loss.backward(); opt.step()
    t0=time.time()
    try:
        if rank == 0:
            d.eval()
            with torch.no_grad():
                for i in range(3): d(torch.randn(16,8))
            d.train()
        if MODE == "barrier": dist.barrier()
        elif MODE == "allreduce": t=torch.ones(1); dist.all_reduce(t)
        elif MODE == "bcast": t=torch.ones(2); dist.broadcast(t, 0); print(rank, t)
        elif MODE == "bobj": o=[{"a":1.0}]; dist.broadcast_object_list(o, 0); print(rank, o)
        elif MODE == "train":
            for s in range(2):
                x = torch.randn(16,8); y = torch.randint(0,3,(16,))
                loss = torch.nn.functional.cross_entropy(d(x), y); opt.zero_grad(); loss.backward(); opt.step()
            print(rank, "train done", flush=True)
            t=torch.ones(1); dist.all_reduce(t)
        print(rank, "ok", time.time()-t0, flush=True)
    except Exception as e:
        print(rank, "ERR", time.time()-t0, type(e).__name__, str(e)[:400], flush=True)
        raise
if __name__ == "__main__":
    mp.spawn(run, args=(2,), nprocs=2)
