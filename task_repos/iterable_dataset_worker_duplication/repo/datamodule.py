"""The data module: export, manifest and the training loader."""

from __future__ import annotations

from torch.utils.data import DataLoader

from collate import collate_records
from config import Config
from export import Manifest, write_export
from logutil import get_logger
from stream import ShardStream

log = get_logger("data")


class ExportDataModule:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.manifest: Manifest | None = None
        self._loader: DataLoader | None = None

    def prepare(self) -> Manifest:
        cfg = self.cfg
        self.manifest = write_export(cfg.data_dir, cfg.num_records, cfg.num_shards, cfg.num_features,
                                     cfg.label_noise, cfg.seed)
        log.info("export: %d records in %d shards (%s)", self.manifest.num_records,
                 len(self.manifest.shards), ", ".join(str(s.records) for s in self.manifest.shards))
        return self.manifest

    def train_loader(self) -> DataLoader:
        if self._loader is None:
            assert self.manifest is not None, "prepare() first"
            dataset = ShardStream(self.manifest.paths, shuffle_shards=self.cfg.shuffle_shards)
            self._loader = DataLoader(
                dataset,
                batch_size=self.cfg.batch_size,
                num_workers=self.cfg.num_workers,
                collate_fn=collate_records,
                persistent_workers=self.cfg.num_workers > 0,
            )
        return self._loader
