import sys, os, json, socket, importlib
import torch, torch.multiprocessing as mp
from dataclasses import replace
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def worker(rank, repo, W, knobs, out):
    sys.path.insert(0, repo); os.chdir(repo)
    import train, config
    cfg = replace(config.TrainConfig(), **knobs, world_size=W, save_checkpoints=False)
    res = train.train(cfg, rank, W)
    if rank == 0:
        torch.save({"state": res.model.state_dict(), "history": res.history}, out)
if __name__ == "__main__":
    W = int(sys.argv[1]); knobs = json.loads(sys.argv[2]); outs = []
    for i, repo in enumerate(sys.argv[3:]):
        k = dict(knobs, master_port=port()); out = f"/tmp/ddpx/cmp{i}.pt"
        mp.spawn(worker, args=(repo, W, k, out), nprocs=W)
        outs.append(torch.load(out))
    a = outs[0]
    for b in outs[1:]:
        print("hist", [(x["train_loss"], x["labelled"]) for x in a["history"]], [(x["train_loss"], x["labelled"]) for x in b["history"]])
        print("maxdiff", max((a["state"][k] - b["state"][k]).abs().max().item() for k in a["state"]))
