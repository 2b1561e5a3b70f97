"""Validation metrics (numpy) and the per-epoch history a run keeps."""

from __future__ import annotations

import numpy as np


def confusion(pred: np.ndarray, target: np.ndarray, n_classes: int) -> np.ndarray:
    cm = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(cm, (target, pred), 1)
    return cm


def summarize(cm: np.ndarray) -> dict:
    tp = np.diag(cm).astype(np.float64)
    precision = tp / np.maximum(cm.sum(axis=0), 1)
    recall = tp / np.maximum(cm.sum(axis=1), 1)
    f1 = 2 * precision * recall / np.maximum(precision + recall, 1e-12)
    return {"val_acc": tp.sum() / cm.sum(), "val_f1": f1.mean(), "worst_recall": recall.min()}


class History:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def append(self, epoch: int, **values) -> None:
        self.rows.append({"epoch": epoch, **values})

    def column(self, name: str) -> list:
        return [row[name] for row in self.rows]

    def state_dict(self) -> list[dict]:
        return [dict(row) for row in self.rows]

    def load_state_dict(self, rows: list[dict]) -> None:
        self.rows = [dict(row) for row in rows]
