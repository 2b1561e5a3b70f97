"""The data side of the job: corpus splits, the sharded and length-bucketed training loader."""

from __future__ import annotations

from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from collate import pad_batch
from config import TrainConfig
from corpus import TicketDataset, make_tickets
from loading import EpochLoader, plain_loader
from logutil import get_logger
from samplers import BucketBatchSampler

log = get_logger("data")


class TicketDataModule:
    def __init__(self, cfg: TrainConfig, rank: int, world_size: int) -> None:
        self.cfg, self.rank, self.world_size = cfg, rank, world_size
        self.train_set: TicketDataset | None = None
        self.val_set: TicketDataset | None = None

    def setup(self) -> None:
        cfg = self.cfg
        self.train_set = TicketDataset(make_tickets(cfg.num_samples, cfg, seed=cfg.data_seed))
        self.val_set = TicketDataset(make_tickets(cfg.num_val, cfg, seed=cfg.data_seed + 1,
                                                  first_id=cfg.num_samples))
        if self.rank == 0:
            log.info("corpus: %d train / %d val tickets, %d queues, lengths %d-%d", len(self.train_set),
                     len(self.val_set), cfg.num_classes, cfg.min_len, cfg.max_len)

    def train_dataloader(self, start_epoch: int = 0) -> EpochLoader:
        """This rank's shard of the training split, reshuffled every epoch, in length buckets."""
        assert self.train_set is not None, "setup() first"
        cfg = self.cfg
        sampler = DistributedSampler(self.train_set, num_replicas=self.world_size, rank=self.rank,
                                     shuffle=True, seed=cfg.seed)
        batches = BucketBatchSampler(sampler, self.train_set.lengths(), cfg.batch_size, cfg.pool_batches)
        loader = DataLoader(self.train_set, batch_sampler=batches, collate_fn=pad_batch)
        return EpochLoader(loader, epoch=start_epoch)

    def val_dataloader(self) -> DataLoader:
        assert self.val_set is not None, "setup() first"
        return plain_loader(self.val_set, 64, pad_batch)
