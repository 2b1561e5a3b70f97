"""Probe in the kit driver: which records each pass of a DataLoader handed to the training process,
from which worker. Wraps _MultiProcessingDataLoaderIter._process_data / _reset and
_SingleProcessDataLoaderIter._next_data before agent code is imported; a batch's record ids are its
one 1-D int64 tensor. report(): per pass, workers, records per worker, size, distinct, digest."""

import hashlib
from collections import Counter

import torch
import torch.utils.data.dataloader as dl

PASSES: list = []
ORIG = {}


def _ids(batch):
    vals = list(batch.values()) if isinstance(batch, dict) else list(batch) \
        if isinstance(batch, (list, tuple)) else [getattr(batch, k, None) for k in dir(batch)
                                                   if not k.startswith("_")]
    ints = [v for v in vals if isinstance(v, torch.Tensor) and v.dtype == torch.int64 and v.dim() == 1]
    return ints[0].tolist() if len(ints) == 1 else None


def _new_pass(it):
    it.__dict__["_check_pass"] = len(PASSES)
    PASSES.append({"workers": int(getattr(it, "_num_workers", 0)), "by_worker": {}, "unreadable": 0})


def _record(it, batch, worker):
    if "_check_pass" not in it.__dict__:
        _new_pass(it)
    p = PASSES[it.__dict__["_check_pass"]]
    ids = _ids(batch)
    if ids is None:
        p["unreadable"] += 1
        return
    p["by_worker"].setdefault(str(worker), []).extend(ids)


def _process_data(self, data, worker_idx):
    out = ORIG["process"](self, data, worker_idx)
    _record(self, out, worker_idx)
    return out


def _multi_reset(self, loader, first_iter=False):
    _new_pass(self)
    return ORIG["reset"](self, loader, first_iter)


def _single_next(self):
    out = ORIG["single"](self)
    _record(self, out, "main")
    return out


def install(ctx) -> None:
    M, S = dl._MultiProcessingDataLoaderIter, dl._SingleProcessDataLoaderIter
    ORIG.update(process=M._process_data, reset=M._reset, single=S._next_data)
    M._process_data, M._reset, S._next_data = _process_data, _multi_reset, _single_next


def report(ctx) -> dict:
    M, S = dl._MultiProcessingDataLoaderIter, dl._SingleProcessDataLoaderIter
    intact = M._process_data is _process_data and M._reset is _multi_reset and S._next_data is _single_next
    out = []
    for p in PASSES:
        if not p["by_worker"] and not p["unreadable"]:
            continue  # an iterator that never delivered a batch
        every = sorted(i for ids in p["by_worker"].values() for i in ids)
        owners = Counter(i for ids in p["by_worker"].values() for i in set(ids))
        out.append({"workers": p["workers"], "per_worker": {w: len(v) for w, v in p["by_worker"].items()},
                    "records": len(every), "distinct": len(set(every)), "unreadable": p["unreadable"],
                    "shared": sum(1 for c in owners.values() if c > 1),
                    "digest": hashlib.sha256(repr(sorted(set(every))).encode()).hexdigest()[:16]})
    return {"intact": intact, "passes": out}
