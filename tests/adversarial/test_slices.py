"""The docker corpus slices: every entry runs in exactly one slice, and ``auto`` rotates daily."""

from __future__ import annotations

import datetime

import pytest

from ..tiers import DOCKER_CORPUS_SLICES as AUTO_SLICES
from ..tiers import rotating, selected_slice
from .corpus import CORPUS, VARIANT_CORPUS


def test_auto_slices_cover_the_corpus_once_over_consecutive_days() -> None:
    day = datetime.date(2026, 12, 1)
    slices = {selected_slice("auto", day + datetime.timedelta(days=d), AUTO_SLICES)
              for d in range(AUTO_SLICES)}
    assert slices == {(k, AUTO_SLICES) for k in range(AUTO_SLICES)}
    every = CORPUS + VARIANT_CORPUS  # what the docker corpus rotates over
    runs = [i for k, n in slices for i in range(len(every)) if i % n == k]
    assert sorted(runs) == list(range(len(every)))
    assert len({c.id for c in every}) == len(every)  # a variant's entries are named family@N:...


@pytest.mark.parametrize("spec", ["4/4", "x", "1/0", "-1/3", ""])
def test_bad_slice_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="ADVERSARIAL_DOCKER_SLICE"):
        selected_slice(spec, name="ADVERSARIAL_DOCKER_SLICE")


def test_all_and_explicit() -> None:
    assert selected_slice("all") == (0, 1) and selected_slice("2/5") == (2, 5)


def test_rotating_reads_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SLICE", "1/3")
    assert rotating(list(range(7)), "SOME_SLICE", 4) == [1, 4]
    monkeypatch.setenv("SOME_SLICE", "all")
    assert rotating(list(range(3)), "SOME_SLICE", 4) == [0, 1, 2]
