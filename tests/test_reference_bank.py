"""The host's reference bank: draws per check, worn out after a number of uses, results kept
once a check sends them, checks told apart by their files, off by environment."""

from __future__ import annotations

import json

import pytest

from sandbox_env.sandbox.reference_bank import ReferenceBank


def files(seed_choices: list[int], marker: bytes = b"") -> dict[str, bytes]:
    verify = {"verify": {"knobs": {"seed": seed_choices, "lr": [0.1, 0.2]}, "world_size": 2,
                         "world_sizes": [3, 4]}}
    return {"verify.json": json.dumps(verify).encode(), "check.py": b"print()" + marker}


def test_a_slot_serves_its_draw_until_worn_out_and_keeps_the_reference_once() -> None:
    bank = ReferenceBank(slots=1, uses=3, where=None)
    f = files(list(range(1000)))
    first = bank.take(f)
    assert first is not None and first.reference is None
    data = json.loads(first.file())
    assert data["world"] in (3, 4) and data["knobs"]["seed"] in range(1000) and data["reference"] is None
    bank.keep(first, {"reports": "{}", "states": {}})
    bank.keep(first, {"reports": "{\"0\": {}}", "states": {}})  # the first results stay
    second = bank.take(f)
    assert second is not None and second.entry.draw == first.entry.draw
    assert second.reference == {"reports": "{}", "states": {}}
    assert json.loads(second.file())["reference"] == {"reports": "{}", "states": {}}
    bank.take(f)
    fourth = bank.take(f)  # worn out after 3 uses: drawn afresh, no results yet
    assert fourth is not None and fourth.reference is None and fourth.entry is not first.entry


def test_checks_with_other_files_never_share_draws() -> None:
    bank = ReferenceBank(slots=1, uses=10, where=None)
    a = bank.take(files([1, 2, 3]))
    assert a is not None
    bank.keep(a, {"reports": "{}", "states": {}})
    b = bank.take(files([1, 2, 3], marker=b"#"))  # the check changed: another pool
    assert b is not None and b.reference is None
    bank.keep(None, {"reports": "{}", "states": {}})  # nothing to keep into: ignored
    bank.keep(b, "not results")


def test_a_draw_with_results_serves_first_and_draws_cover_the_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    bank = ReferenceBank(slots=4, uses=1000, where=None)
    f = files(list(range(10**6)))
    seen = {json.dumps(d.entry.draw, sort_keys=True) for d in (bank.take(f) for _ in range(200)) if d}
    assert len(seen) == 4  # 200 verifications without results: spread over the 4 slots
    warm = ReferenceBank(slots=16, uses=8, where=None)
    first = warm.take(f)
    warm.keep(first, {"reports": "{}", "states": {}})
    later = [warm.take(f) for _ in range(7)]
    assert all(d is not None and d.entry is first.entry and d.reference for d in later)  # 8 uses
    assert warm.take(f).entry is not first.entry  # worn out: another slot, drawn afresh
    monkeypatch.setenv("SANDBOX_ENV_REFERENCE_BANK", "off")
    assert ReferenceBank().take(f) is None
    monkeypatch.delenv("SANDBOX_ENV_REFERENCE_BANK")
    assert ReferenceBank().take(f) is not None


def test_pools_persist_per_sandbox_identity(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A later process with the same sandbox identity starts from the kept draws and results;
    another image or runtime does not share them; an unreadable file starts afresh."""
    f = files(list(range(10**6)))
    first = ReferenceBank({"image": "sha256:a", "runtime": "runc"}, slots=1, uses=5, where=tmp_path)
    d = first.take(f)
    first.keep(d, {"reports": "{}", "states": {"0": "AA=="}})
    again = ReferenceBank({"image": "sha256:a", "runtime": "runc"}, slots=1, uses=5, where=tmp_path)
    e = again.take(f)
    assert e is not None and d is not None and e.entry.draw == d.entry.draw and e.entry.uses == 2
    assert e.reference == {"reports": "{}", "states": {"0": "AA=="}}
    other = ReferenceBank({"image": "sha256:a", "runtime": "runsc"}, slots=1, uses=5, where=tmp_path)
    o = other.take(f)
    assert o is not None and o.reference is None
    for p in tmp_path.glob("*.json"):
        p.write_text("{not json")
    fresh = ReferenceBank({"image": "sha256:a", "runtime": "runc"}, slots=1, uses=5, where=tmp_path).take(f)
    assert fresh is not None and fresh.reference is None
    monkeypatch.setenv("SANDBOX_ENV_REFERENCE_BANK", str(tmp_path / "here"))
    ReferenceBank(slots=1).take(f)
    assert len(list((tmp_path / "here").glob("*.json"))) == 1
    monkeypatch.setenv("SANDBOX_ENV_REFERENCE_BANK", "memory")
    assert ReferenceBank().where is None and ReferenceBank().take(f) is not None
