"""Seeded variants (sandbox_env/suite/variants.py, variant_tasks.py): generation, addressing, splits,
the certified list, and mock mode over variants. Fast: no docker, no torch."""

from __future__ import annotations

import ast
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_env.environment import TriageEnvironment
from sandbox_env.errors import UnknownTask, UnknownVariant, VariantNotCertified
from sandbox_env.models import Outcome, RunResult, Verdict
from sandbox_env.quality.certify import certify_targets, parse_indices
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.suite.traces import (
    Provenance,
    behaviour_states,
    load_traces,
    record_task,
    stale_states,
    task_states,
)
from sandbox_env.suite.variant_tasks import CACHE_ENV, load_certified, record_certified
from sandbox_env.suite.variants import (
    CERTIFIED_FILE,
    Family,
    Variant,
    VariantError,
    render_prose,
    replace_log_block,
    to_base,
)
from sandbox_env.workspace import Workspace, apply_patch, content_hash, unified_diff

ROOT = Path(__file__).resolve().parent.parent
# every family that declares variants: adding a family folder adds it here
FAMILIES = sorted(d.name for d in (ROOT / "task_repos").iterdir() if (d / "variants.toml").is_file())


@pytest.fixture(autouse=True)
def variant_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.getbasetemp() / "variant-cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    return cache


@pytest.fixture(scope="module")
def families() -> dict[str, Family]:
    return {f: Family(ROOT / "task_repos" / f) for f in FAMILIES}


@pytest.fixture(scope="module")
def open_tasks() -> TaskRegistry:
    """The real tasks, uncertified variants allowed (what development and tests opt into)."""
    return TaskRegistry(ROOT / "task_repos", allow_uncertified=True)


def copy_oom(root: Path, *skip: str) -> Path:
    """oom_graph_leak copied to ``root``/oom_graph_leak without its held-out batches, its
    variants' own recordings (and ``skip``)."""
    dst = root / "oom_graph_leak"
    shutil.copytree(ROOT / "task_repos" / "oom_graph_leak", dst,
                    ignore=shutil.ignore_patterns("heldout*", "__pycache__", *skip))
    shutil.rmtree(dst / "variants" / "traces", ignore_errors=True)
    return dst


@pytest.fixture(scope="module")
def unrecorded(tmp_path_factory: pytest.TempPathFactory) -> TaskRegistry:
    """oom_graph_leak whose variants have no recordings of their own (variant 0 keeps its)."""
    return TaskRegistry(copy_oom(tmp_path_factory.mktemp("unrecorded")).parent, allow_uncertified=True)


@pytest.fixture(scope="module")
def partly_certified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A task root holding oom_graph_leak with only its test variants (6, 7) certified, whatever
    the real family has certified since: the refusal paths need an uncertified variant."""
    root = tmp_path_factory.mktemp("partly-certified")
    dst = copy_oom(root, CERTIFIED_FILE)
    for c in load_certified(ROOT / "task_repos" / "oom_graph_leak"):
        if c.index in (6, 7):
            record_certified(dst, c.index, c.repo_hash, c.runs, c.mode)
    return root


@pytest.fixture(scope="module")
def generated(families: dict[str, Family]) -> dict[tuple[str, int], Variant]:
    """Every variant of every family, generated once for the module."""
    return {(f.name, i): f.generate(i) for f in families.values() for i in range(f.data.count)}


def _variants(families: dict[str, Family], generated: dict[tuple[str, int], Variant]
              ) -> Iterator[tuple[Family, int, Variant]]:
    for fam in families.values():
        for i in range(1, fam.data.count):
            yield fam, i, generated[fam.name, i]


# --------------------------------------------------------------------------- generation
def test_every_family_declares_eight_variants_with_two_test(families: dict[str, Family]) -> None:
    for fam in families.values():
        assert fam.data.count >= 8 and len(fam.data.test) >= 2
        assert 0 in fam.data.train or not fam.data.train  # a held-out family: every variant in test


def test_generation_is_deterministic_and_seeds_differ(families: dict[str, Family],
                                                      generated: dict[tuple[str, int], Variant]) -> None:
    for fam in families.values():
        hashes = set()
        for i in range(fam.data.count):
            a, b = generated[fam.name, i], Family(fam.root).generate(i)  # a fresh Family: same bytes
            assert a.repo == b.repo and a.patches == b.patches and a.solution_patch == b.solution_patch
            assert a.manifest == b.manifest and a.task_toml == b.task_toml
            hashes.add(a.manifest.repo_hash)
        assert len(hashes) == fam.data.count, f"{fam.name}: two variants have the same repo"


def test_every_certified_variant_keeps_its_draw(families: dict[str, Family]) -> None:
    for fam in families.values():
        certified = {c.index for c in load_certified(fam.root)}
        assert certified <= set(fam.draws), (fam.name, certified - set(fam.draws))
        for i in certified:
            assert fam.generate(i).manifest.draw == "kept"


def test_editing_the_tables_never_redraws_a_kept_variant_and_redraws_only_the_edited_choice(
        tmp_path: Path) -> None:
    """A kept draw (variants_drawn.toml) makes the same bytes whatever the tables say; a variant
    without one draws each choice from its own stream, so adding a table entry or a placement
    changes only that choice."""
    root = copy_oom(tmp_path, "traces")
    before = Family(root)
    kept = {i: before.generate(i).manifest.repo_hash for i in before.draws}
    fresh = before.draw(3)  # what index 3 would draw without its kept draw
    toml = (root / "variants.toml").read_text()
    toml = toml.replace('criterion = ["loss_fn", "objective", "mse"]',
                        'criterion = ["loss_fn", "objective", "mse", "loss_of"]')
    toml += ('\n[[placement]]\nname = "again"\npatch = "variants/validation_module.patch"\n'
             'solution = "variants/validation_module.solution.patch"\nvariants = [5]\n')
    (root / "variants.toml").write_text(toml)
    after = Family(root)
    assert {i: after.generate(i).manifest.repo_hash for i in after.draws} == kept
    redrawn = after.draw(3)
    assert redrawn.sizes == fresh.sizes and redrawn.modules == fresh.modules
    assert {k: v for k, v in redrawn.names.items() if k != "criterion"} == \
        {k: v for k, v in fresh.names.items() if k != "criterion"}
    assert after.draw(5).placement == "again"  # pinned, not drawn
    (root / "variants_drawn.toml").unlink()
    assert Family(root).generate(5).manifest.placement == "again"


def test_a_kept_draw_of_a_removed_placement_and_bad_pins_are_refused(tmp_path: Path) -> None:
    root = copy_oom(tmp_path, "traces")
    toml = (root / "variants.toml").read_text()
    for pins in ("[10]", "[8, 8]", "[0]"):  # out of 1..9, twice, variant 0
        (root / "variants.toml").write_text(toml.replace("variants = [8, 9]", f"variants = {pins}"))
        with pytest.raises(VariantError, match="distinct indices"):
            Family(root)
    (root / "variants.toml").write_text(toml.replace('name = "validation_module"', 'name = "elsewhere"'))
    with pytest.raises(VariantError, match="no longer has"):
        Family(root).generate(1)


def test_a_port_keeps_a_labelled_patch_on_a_placement_and_a_clashing_port_is_dropped(tmp_path: Path) -> None:
    """A labelled patch that no longer applies after a placement is kept when the placement has
    a port of it (``variants/<placement>/<file>``): transformed like any labelled patch. A port
    using one of a kept draw's new names is dropped with the reason; one that does not apply to
    the placed repo is refused; a seeded draw never picks a word a port uses."""
    root = copy_oom(tmp_path, "traces")
    ports = root / "variants" / "validation_module"
    shutil.rmtree(ports)  # the family's own ports: this test writes one
    fam = Family(root)
    index = next(i for i, d in sorted(fam.draws.items()) if d.placement == "validation_module")
    name = "cheat_comment_only.patch"
    assert name in {d.file for d in fam.generate(index).manifest.patches_dropped}
    placed = apply_patch(fam.repo(), (root / "variants" / "validation_module.patch").read_text())
    ported = dict(placed)
    ported["validation.py"] = placed["validation.py"].replace(
        "    model.eval()\n", "    model.eval()\n    # graphs are freed by the allocator at epoch end\n", 1)
    assert ported != placed
    ports.mkdir()
    (ports / name).write_text(unified_diff(placed, ported))
    v = Family(root).generate(index)
    assert name in v.patches and name not in {d.file for d in v.manifest.patches_dropped}
    cfg = fam.task_toml["entry"]["config"]
    assert to_base(apply_patch(v.repo, v.patches[name]), v.manifest, cfg) == ported
    new_name = next(iter(fam.draws[index].names.values()))
    ported["validation.py"] += f"\n{new_name} = None\n"
    (ports / name).write_text(unified_diff(placed, ported))
    v = Family(root).generate(index)
    assert name not in v.patches
    assert any(d.file == name and new_name in d.reason for d in v.manifest.patches_dropped)
    assert all(new_name not in Family(root).draw(i).names.values() for i in range(1, 12))
    (ports / name).write_text(unified_diff(fam.repo(), {**fam.repo(), "train.py": "x = 1\n"}))
    with pytest.raises(VariantError, match="port of placement validation_module does not apply"):
        Family(root).generate(index)


def test_variant_zero_is_the_folder_byte_for_byte(families: dict[str, Family],
                                                  open_tasks: TaskRegistry) -> None:
    for name, fam in families.items():
        v0 = fam.generate(0)
        folder = ROOT / "task_repos" / name
        on_disk = {p.relative_to(folder / "repo").as_posix(): p.read_bytes()
                   for p in (folder / "repo").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
        assert {p: t.encode() for p, t in v0.repo.items()} == on_disk
        assert v0.solution_patch == (folder / "solution.patch").read_text()
        assert v0.manifest.transforms == []
        assert open_tasks.get(f"{name}@0") is open_tasks.get(name)
        assert open_tasks.get(name).repo_hash == v0.manifest.repo_hash


def test_every_variant_compiles_and_its_entry_points_exist(families: dict[str, Family],
                                                           generated: dict[tuple[str, int], Variant]) -> None:
    for fam, i, v in _variants(families, generated):
        trees = {p: ast.parse(t, p) for p, t in v.repo.items() if p.endswith(".py")}
        entry = v.task_toml["entry"]
        for mod in entry["modules"]:
            assert f"{mod}.py" in v.repo, (fam.name, i, mod)
        cfg_mod, _, cfg_cls = entry["config"].partition(":")
        train_mod, _, train_fn = entry["train"].partition(":")
        classes = {n.name: n for n in ast.walk(trees[f"{cfg_mod}.py"]) if isinstance(n, ast.ClassDef)}
        assert cfg_cls in classes, (fam.name, i, entry)
        fields = {s.target.id for s in classes[cfg_cls].body
                  if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
        assert train_fn in {n.name for n in trees[f"{train_mod}.py"].body if isinstance(n, ast.FunctionDef)}
        verify = v.task_toml["verify"]
        assert set(verify.get("knobs", {})) <= fields, (fam.name, i, set(verify["knobs"]) - fields)
        assert set(verify.get("set", {})) <= fields
        assert v.task_toml["signal_files"] and all(p in v.repo for p in v.task_toml["signal_files"])
        for old, new in v.manifest.renames.items():  # no variant-0 name is left in the code
            assert old not in {t.id for t in _names(trees)}, (fam.name, i, old, new)


def _names(trees: dict[str, ast.Module]) -> list[ast.Name]:
    return [n for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.Name)]


def test_concepts_and_signal_files_follow_the_variant(generated: dict[tuple[str, int], Variant]) -> None:
    for (family, i), v in generated.items():
        if i == 0:
            continue
        pats = [p for c in v.task_toml["concepts"] for p in c["patterns"]]
        for old, new in v.manifest.renames.items():
            if any(old in p for c in generated[family, 0].task_toml["concepts"] for p in c["patterns"]):
                assert any(new in p for p in pats), (family, i, old, new)
        placement = next((p for p in Family(ROOT / "task_repos" / family).data.placement
                          if p.name == v.manifest.placement), None)
        if placement is not None and placement.signal_files:  # a placement that adds a file
            assert len(v.task_toml["signal_files"]) > len(generated[family, 0].task_toml["signal_files"])


def test_no_variant_names_a_variant_zero_identifier_in_its_other_files(
        families: dict[str, Family], generated: dict[tuple[str, int], Variant]) -> None:
    """A README or script of variant N never quotes a name variant N renamed (`fit` where the
    variant's code says `run_training`): the agent would look for a name its code does not have."""
    for fam, i, v in _variants(families, generated):
        for path, text in v.repo.items():
            if path.endswith(".py"):
                continue
            for old, new in v.manifest.renames.items():
                quoted = re.search(r"`[^`\n]*\b" + re.escape(old) + r"\b[^`\n]*`", text)
                assert old == new or not quoted, (fam.name, i, path, old, quoted and quoted.group())


def test_variants_change_names_and_sizes(families: dict[str, Family],
                                         generated: dict[tuple[str, int], Variant]) -> None:
    for fam, i, v in _variants(families, generated):
        kinds = {t.kind for t in v.manifest.transforms}
        assert {"rename", "rename_module"} <= kinds, (fam.name, i, kinds)


def test_transformed_patches_apply_and_map_back(families: dict[str, Family],
                                                generated: dict[tuple[str, int], Variant]) -> None:
    """Every labelled state of every variant maps back to variant 0's state exactly, so variant
    0's classifier gives it variant 0's label (the classifier is a function of the files)."""
    originals = {f.name: {name: apply_patch(f.repo(), (f.root / "patches" / name).read_text())
                          for name in generated[f.name, 0].patches} for f in families.values()}
    for fam, i, v in _variants(families, generated):
        base_cfg = fam.task_toml["entry"]["config"]
        placement = next((p for p in fam.data.placement if p.name == v.manifest.placement), None)
        solution_file = placement.solution if placement else "solution.patch"
        fixed = apply_patch(v.repo, v.solution_patch)
        reference = apply_patch(v.base_repo, (fam.root / solution_file).read_text())
        assert to_base(fixed, v.manifest, base_cfg) == reference
        assert set(v.patches) | {d.file for d in v.manifest.patches_dropped} == set(originals[fam.name])
        if placement is None:
            assert v.base_repo == fam.repo() and not v.manifest.patches_dropped
        for name, text in v.patches.items():
            patched = apply_patch(v.repo, text)
            if placement is None:
                original = originals[fam.name][name]
            else:  # its port to the placement (variants/<placement>/<file>) wins, else the labelled patch
                port = fam.root / "variants" / placement.name / name
                own = port if port.is_file() else fam.root / "patches" / name
                original = apply_patch(v.base_repo, own.read_text())
            assert to_base(patched, v.manifest, base_cfg) == original, (fam.name, i, name)


def test_the_incident_report_is_renamed_and_has_a_hook_for_the_variants_own_log(
        generated: dict[tuple[str, int], Variant], tmp_path: Path) -> None:
    v = generated["oom_graph_leak", 3]  # certified: its report quotes its own unfixed run
    assert "own run (variants/logs/3.log)" in v.manifest.incident_report
    own = (ROOT / "task_repos" / "oom_graph_leak" / "variants" / "logs" / "3.log").read_text()
    assert own.strip().splitlines()[-1].strip() in v.task_toml["incident_report"]
    # before certification (no log of its own): variant 0's quoted log, with the names renamed
    fam = Family(copy_oom(tmp_path, "traces", "logs"))
    v = fam.generate(3)
    assert "not yet re-recorded" in v.manifest.incident_report
    assert v.manifest.repo_hash == generated["oom_graph_leak", 3].manifest.repo_hash  # log: not in the repo
    for old, new in v.manifest.module_renames.items():
        if f"/{old}.py" in fam.task_toml["incident_report"]:
            assert f"/{new}.py" in v.task_toml["incident_report"]
            assert f"/{old}.py" not in v.task_toml["incident_report"]
    report = "INC-1\n\nLast lines:\n\n    old line 1\n    old line 2\n\nImpact: none\n"
    assert replace_log_block(report, "new 1\nnew 2\nnew 3\n", keep=2) == (
        "INC-1\n\nLast lines:\n\n    new 2\n    new 3\n\nImpact: none\n")


def test_prose_templates_are_arithmetic_over_config_fields_only() -> None:
    values = {"n_val": 368640, "epochs": 2}
    assert render_prose("{n_val / 1000:.0f}k rows, {0.34 + n_val * 6.33e-6:.1f} GB", values) == (
        "369k rows, 2.7 GB")
    assert render_prose("epoch 1/{epochs} of {{braces}}", values) == "epoch 1/2 of {braces}"
    for bad in ("{__import__('os').getcwd()}", "{n_val.bit_length()}", "{width}", "{epochs!r}", "{1 +}"):
        with pytest.raises(VariantError):
            render_prose(bad, values)


def test_the_reports_figures_follow_the_variants_sizes(families: dict[str, Family],
                                                       generated: dict[tuple[str, int], Variant]) -> None:
    """oom's report says how many validation rows and how high the uncapped peak goes; a variant
    with another n_val says its own (the peak: measured per size, variants.toml)."""
    fam = families["oom_graph_leak"]
    base = fam.task_toml["incident_report"]
    assert "393k rows" in base and "2.8 GB" in base
    seen = set()
    for i in range(1, fam.data.count):
        v = generated["oom_graph_leak", i]
        n_val = v.manifest.sizes.get("n_val", (None, "393216"))[1]
        want = {"393216": ("393k rows", "2.8 GB"), "368640": ("369k rows", "2.7 GB"),
                "344064": ("344k rows", "2.5 GB")}[n_val]
        report, notes = v.task_toml["incident_report"], v.task_toml["notes"]
        assert all(w in report for w in want) and want[1] in notes, (i, want)
        if n_val != "393216":
            assert "393k rows" not in report and "2.8 GB" not in report + notes
            assert "figures follow this variant's config" in v.manifest.incident_report
        seen.add(n_val)
    assert len(seen) >= 2  # some variants change n_val: the test sees both paths
    fsdp = families["fsdp_collective_deadlock"]
    for i in range(1, fsdp.data.count):
        v = generated["fsdp_collective_deadlock", i]
        epochs = v.manifest.sizes.get("epochs", (None, "3"))[1]
        assert f"epoch 1/{epochs} | train loss" in v.task_toml["incident_report"]


def test_a_prose_template_that_does_not_render_variant_0s_phrase_is_refused(tmp_path: Path) -> None:
    root = copy_oom(tmp_path, "traces")
    toml = (root / "variants.toml").read_text()
    for old, new, why in (('"{n_val / 1000:.0f}k rows"', '"{n_val / 1024:.0f}k rows"', "renders"),
                          ('"393k rows" =', '"393 thousand rows" =', "not in task.toml")):
        (root / "variants.toml").write_text(toml.replace(old, new))
        with pytest.raises(VariantError, match=why):
            Family(root)


def _code_quotes(task_toml: dict, repo: dict[str, str]) -> list[str]:
    """What the agent-facing prose (hints, explanation) quotes of ``repo``'s code: its
    backticked spans and the explanation's indented lines that occur in the code (whitespace
    folded)."""
    def fold(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip()

    code = fold("\n".join(repo.values()))
    prose = [*task_toml.get("hints", []), task_toml.get("reference_explanation", "")]
    quotes = [q for text in prose for q in re.findall(r"`([^`]+)`", text)]
    quotes += [line for line in task_toml.get("reference_explanation", "").splitlines()
               if line.startswith("    ") and line.strip()]
    return [q for q in quotes if len(fold(q)) > 3 and fold(q) in code]


def test_the_prose_quotes_the_variants_own_code(families: dict[str, Family],
                                                generated: dict[tuple[str, int], Variant]) -> None:
    """A hint or explanation that quotes variant 0's buggy line quotes the variant's line: the
    renames reach attributes (``self.max_update``), and a placement that rewrites or moves the
    bug says so in its ``[placement.prose]`` (oom's `epoch_loss += loss` is
    `step_losses.append(loss)` on loss_lists)."""
    for fam in families.values():
        base = _code_quotes(fam.task_toml, fam.repo())
        assert base or fam.name == "ddp_gradient_hang", fam.name  # the test sees quotes to follow
        for i in range(1, fam.data.count):
            v = generated[fam.name, i]
            got = _code_quotes(v.task_toml, v.repo)
            assert len(got) >= len(base), (fam.name, i, v.manifest.placement, base, got)


def test_a_placement_prose_phrase_not_in_task_toml_is_refused(tmp_path: Path) -> None:
    root = copy_oom(tmp_path, "traces")
    toml = (root / "variants.toml").read_text()
    old = '"Two real bugs in train.py:" ='
    assert old in toml
    (root / "variants.toml").write_text(toml.replace(old, '"Three real bugs in train.py:" ='))
    with pytest.raises(VariantError, match=r"validation_module's prose phrase .* is not in task\.toml"):
        Family(root)


def test_certification_keeps_the_entry_the_draw_and_the_unfixed_run(tmp_path: Path) -> None:
    """certify --record-certified keeps the variant's entry and draw, and the tail of its own
    unfixed run, which replaces variant 0's quoted log in that variant's incident report (the
    sandbox here is a stub: logic only)."""
    from sandbox_env.quality.certify import LOG_LINES, certify_task
    from sandbox_env.suite.variant_tasks import keep_certified

    root = tmp_path / "tasks"
    copy_oom(root, "traces", "variants_drawn.toml", CERTIFIED_FILE)
    spec = TaskRegistry(root, allow_uncertified=True).get("oom_graph_leak@3")
    lines = [f"epoch line {i}" for i in range(60)]
    lines.append("RuntimeError: DefaultCPUAllocator: can't allocate memory")

    class Stub:
        def run(self, ws: Workspace, command: str, limits: object, task: object) -> RunResult:
            return RunResult(command=command, output="\n".join(lines), exit_code=1,
                             outcome=Outcome.failed, duration_s=1.0)

        def verify(self, ws: Workspace, task: object) -> Verdict:
            return Verdict(passed=True, outcome=Outcome.passed)

    res = certify_task(spec, Stub(), runs=1, log=lambda _: None)
    assert res.certified and res.bug_log.splitlines() == lines[-LOG_LINES:]
    assert spec.variant is not None and spec.variant.draw == "seeded"
    kept = keep_certified(root / "oom_graph_leak", spec.variant, res.runs, "docker", res.bug_log)
    assert [p.name for p in kept] == [CERTIFIED_FILE, "variants_drawn.toml", "3.log"]
    assert [c.index for c in load_certified(root / "oom_graph_leak")] == [3]
    v = Family(root / "oom_graph_leak").generate(3)
    assert v.manifest.draw == "kept" and v.manifest.repo_hash == spec.repo_hash
    assert "this variant's own run" in v.manifest.incident_report
    assert "    RuntimeError: DefaultCPUAllocator" in v.task_toml["incident_report"]
    assert "epoch line 59" in v.task_toml["incident_report"]
    assert "epoch line 40" not in v.task_toml["incident_report"]  # only the last lines are quoted


@pytest.mark.parametrize(("output", "certified"), [
    ("audit: 1 epoch\nRuntimeError: DefaultCPUAllocator: can't allocate memory\n", True),
    ("audit: 1 epoch\nfinished\n", False)])
def test_a_silent_failure_is_reproduced_by_its_signature_whatever_the_exit_code(
        tmp_path: Path, output: str, certified: bool) -> None:
    """A silent family's unfixed run exits 0 and shows its symptom in an audit line: certification
    counts it as reproduced when the signature shows, as the environment does (logic only)."""
    from sandbox_env.quality.certify import certify_task

    root = tmp_path / "tasks"
    copy_oom(root)
    spec = TaskRegistry(root, allow_uncertified=True).get("oom_graph_leak")

    class Stub:
        def run(self, ws: Workspace, command: str, limits: object, task: object) -> RunResult:
            return RunResult(command=command, output=output, exit_code=0, outcome=Outcome.passed,
                             duration_s=1.0)

        def verify(self, ws: Workspace, task: object) -> Verdict:
            return Verdict(passed=True, outcome=Outcome.passed)

    res = certify_task(spec, Stub(), runs=2, log=lambda _: None)
    assert res.certified is certified and res.reproduced == (2 if certified else 0)
    assert spec.failure.shows_in(output) is certified


# --------------------------------------------------------------------------- classification
@pytest.mark.parametrize("family", FAMILIES)
def test_the_inverse_rename_restores_every_labelled_state_label(open_tasks: TaskRegistry,
                                                                family: str) -> None:
    """The variant's classifier (inverse rename + variant 0's) on every labelled state of a
    train and a test variant and of the first variant of each placement (its states map back to
    variant 0's names with the bug moved or rewritten: the classifier sees code it was never tuned
    on); every other variant without a placement is covered by the exact map-back above."""
    data = open_tasks.variants_data(family)
    assert data is not None
    first: dict[str, int] = {}
    for i in range(data.count - 1, 0, -1):
        variant = open_tasks.get(f"{family}@{i}").variant
        if variant is not None and variant.placement:
            first[variant.placement] = i
    assert sorted(first) == sorted(p.name for p in data.placement), f"{family}: a placement no variant shows"
    for i in sorted({1, data.test[0], *first.values()}):
        spec = open_tasks.get(f"{family}@{i}")
        for state, behaviour, files in task_states(spec):
            assert spec.classifier(files) == behaviour, (spec.id, state)


def test_a_variant_zero_name_in_a_variant_workspace_is_unsure(open_tasks: TaskRegistry) -> None:
    spec = open_tasks.get("oom_graph_leak@2")
    assert spec.variant is not None
    old = next(iter(spec.variant.renames))  # a variant-0 identifier the variant renamed
    files = apply_patch(spec.repo_files(), spec.solution_patch)
    files["train.py"] += f"\n\n{old} = None\n"
    assert spec.classifier(files) == "unsure"
    v = MockSandbox().verify(Workspace(files), spec)
    assert v.provenance == "unsure" and not v.passed
    module = next(iter(spec.variant.module_renames))  # a variant-0 module file planted beside
    files = {**apply_patch(spec.repo_files(), spec.solution_patch), f"{module}.py": "X = 1\n"}
    assert spec.classifier(files) == "unsure"


# --------------------------------------------------------------------------- mock mode
def test_mock_replays_variant_zero_mapped_and_never_says_recorded(unrecorded: TaskRegistry) -> None:
    spec = unrecorded.get("oom_graph_leak@6")
    assert spec.variant is not None
    mock = MockSandbox()
    run = mock.run(Workspace(spec.repo_files()), spec.run_command, spec.limits, spec)
    assert run.source.startswith("mock:variant0-mapped:")
    assert "recorded run of an equivalent project" in run.output and "(recorded)" not in run.output
    for module, new in spec.variant.module_renames.items():  # the traceback names the variant's files
        assert f"/{module}.py" not in run.output or f"{module}.py" not in spec.variant.module_renames
        if f"/{module}.py" in run.output:
            pytest.fail(f"{module}.py of variant 0 in the output (variant names it {new}.py)")
    bug = mock.verify(Workspace(spec.repo_files()), spec)
    fixed = mock.verify(Workspace(apply_patch(spec.repo_files(), spec.solution_patch)), spec)
    assert not bug.passed and fixed.passed
    for v in (bug, fixed):
        assert v.provenance == "inferred" and v.source.startswith("mock:variant0-mapped:")
        assert any("recorded run of an equivalent project" in r for r in v.reasons)
    ls = mock.run(Workspace(spec.repo_files()), "ls", spec.limits, spec)
    assert set(ls.output.split()) == set(spec.repo_files())


class _CannedSandbox:
    """Stands in for docker in record_task (this test isolates the mock's lookup): every run
    prints which variant ran it; a state verifies when it is labelled fixed."""

    def __init__(self, spec: TaskSpec) -> None:
        self.fixed = {content_hash(f) for _, b, f in task_states(spec) if b == "fixed"}

    def run(self, ws: Workspace, command: str, limits: object, task: TaskSpec) -> RunResult:
        return RunResult(command=command, output=f"real run of {task.id}\n", exit_code=1,
                         outcome=Outcome.failed, duration_s=1.0, source="docker")

    def verify(self, ws: Workspace, task: TaskSpec) -> Verdict:
        ok = ws.content_hash() in self.fixed
        return Verdict(passed=ok, outcome=Outcome.passed if ok else Outcome.failed,
                       reasons=[f"checked {task.id}"], source="docker")


def test_a_variant_replays_its_own_recording_of_a_behaviour_and_falls_back_without_one(
        tmp_path: Path) -> None:
    """A variant recorded one state per behaviour (record --behaviours, in the family's
    variants/traces/<N>/) answers from those runs: its exact recorded states are `recorded`,
    another state of a recorded behaviour replays the variant's own run (`inferred`); a behaviour
    it has no run of, and recordings of other bytes (the variant re-drawn since), fall back to
    variant 0's recordings mapped in."""
    tasks = TaskRegistry(copy_oom(tmp_path).parent, allow_uncertified=True)
    spec = tasks.get("oom_graph_leak@6")
    states = {s: (b, f) for s, b, f in task_states(spec)}
    chosen = behaviour_states(spec)
    assert {"original", "solution"} <= chosen and {states[s][0] for s in chosen} == \
        {b for b, _ in states.values()} and len(chosen) == len({b for b, _ in states.values()})
    unrecorded = {s for s in chosen if states[s][0] == "no_result"}  # a behaviour left unrecorded
    record_task(spec, _CannedSandbox(spec), Provenance(source="docker"), log=lambda _: None,
                only=chosen - unrecorded)
    assert spec.traces_dir == tmp_path / "oom_graph_leak" / "variants" / "traces" / "6"
    mock = MockSandbox()
    fixed = mock.verify(Workspace(states["solution"][1]), spec)
    assert fixed.passed and fixed.provenance == "recorded" and fixed.source == "mock:solution"
    other_fix = next(s for s, (b, _) in states.items() if b == "fixed" and s not in chosen)
    v = mock.verify(Workspace(states[other_fix][1]), spec)
    assert v.passed and v.provenance == "inferred" and v.source == "mock:solution"
    run = mock.run(Workspace(states[other_fix][1]), spec.run_command, spec.limits, spec)
    assert run.output.startswith("real run of oom_graph_leak@6")
    no_result = next(s for s, (b, _) in states.items() if b == "no_result")
    v = mock.verify(Workspace(states[no_result][1]), spec)
    assert not v.passed and v.source.startswith("mock:variant0-mapped:")
    original = spec.traces_dir / "original.json"
    original.write_text(original.read_text().replace(content_hash(spec.repo_files()), "sha256:other"))
    v = MockSandbox().verify(Workspace(states["solution"][1]), spec)
    assert v.provenance == "inferred" and v.source.startswith("mock:variant0-mapped:")


def test_every_certified_variant_replays_its_own_recordings(open_tasks: TaskRegistry) -> None:
    """Every certified variant has recordings of its own in its family's folder, one per
    behaviour, of its current bytes and judged by its current check (else the mock would fall
    back to variant 0's runs mapped in); each recorded docker verdict agrees with the state's
    label, and its run outcome, verdict outcome and pass are variant 0's for the same state (the
    mapping the mock falls back on for a behaviour a variant has no run of)."""
    for family in FAMILIES:
        certified = sorted({c.index for c in load_certified(ROOT / "task_repos" / family)})
        traces_root = ROOT / "task_repos" / family / "variants" / "traces"
        recorded = sorted(int(d.name) for d in traces_root.glob("*") if d.is_dir())
        assert certified and recorded == certified, (family, "recorded", recorded, "certified", certified)
        base = {t.state: t for t in load_traces(open_tasks.get(family))}
        for index in recorded:
            spec = open_tasks.get(f"{family}@{index}")
            traces = load_traces(spec)
            assert {t.state for t in traces} == behaviour_states(spec), spec.id
            assert not stale_states(spec) & behaviour_states(spec), (spec.id, stale_states(spec))
            for t in traces:
                assert t.verdict.passed == (t.behaviour == "fixed"), (spec.id, t.state, t.verdict.reasons[:1])
                assert t.verdict.outcome != Outcome.infra_error, (spec.id, t.state)
                b = base[t.state]
                assert (t.runs[0].outcome, t.verdict.outcome, t.verdict.passed) == \
                    (b.runs[0].outcome, b.verdict.outcome, b.verdict.passed), (spec.id, t.state)


# --------------------------------------------------------------------------- addressing
def test_registry_addresses_variants_in_the_cache(open_tasks: TaskRegistry, variant_cache: Path) -> None:
    spec = open_tasks.get("oom_graph_leak@3")
    assert spec.id == "oom_graph_leak@3" and spec.family == "oom_graph_leak" and spec.variant_index == 3
    assert spec.root.is_relative_to(variant_cache) and not spec.root.is_relative_to(ROOT)
    assert spec.variant is not None and spec.variant.split == "train"
    assert spec.repo_hash == spec.variant.repo_hash
    assert json.loads((spec.root / "variant.json").read_text())["repo_hash"] == spec.repo_hash
    assert spec.address == "oom_graph_leak@3"
    assert open_tasks.get("oom_graph_leak").address == "oom_graph_leak@0"
    assert not (spec.root / "classifier.py").exists() and (spec.root / "checks" / "check.py").exists()
    assert open_tasks.get("oom_graph_leak@3") is spec  # generated once per registry


@pytest.mark.parametrize("bad", ["oom_graph_leak@1000", "oom_graph_leak@-1", "oom_graph_leak@x", "nope@1"])
def test_unknown_variants_are_unknown_tasks(open_tasks: TaskRegistry, bad: str) -> None:
    with pytest.raises(UnknownTask) as exc:
        open_tasks.get(bad)
    assert exc.value.code == "UNKNOWN_TASK" and exc.value.status == 404


def test_reset_seed_with_and_without_task(open_tasks: TaskRegistry) -> None:
    env = TriageEnvironment(open_tasks, MockSandbox())
    by_seed = env.reset(task="oom_graph_leak", seed=3)
    st = env.state
    assert (st.family, st.variant, st.task_name) == ("oom_graph_leak", 3, "oom_graph_leak@3")
    assert by_seed.current_files == open_tasks.get("oom_graph_leak@3").repo_files()
    env.reset(task="oom_graph_leak@3", seed=5)  # an explicit variant wins over the seed
    assert env.state.variant == 3 and env.state.repo_hash == st.repo_hash
    env.reset(task="oom_graph_leak")
    assert env.state.variant == 0 and env.state.repo_hash == open_tasks.get("oom_graph_leak").repo_hash
    for seed in range(12):  # no task: the seed picks a family, variant 0 (today's meaning)
        env.reset(seed=seed)
        assert env.state.variant == 0 and env.state.family == env.state.task_name
    with pytest.raises(UnknownVariant):
        env.reset(task="oom_graph_leak", seed=99)


def test_a_task_without_variants_keeps_the_seed_as_today(toy_tasks: TaskRegistry) -> None:
    env = TriageEnvironment(toy_tasks, MockSandbox())
    env.reset(task="toy_mean", seed=3)
    assert (env.state.task_name, env.state.variant, env.state.seed) == ("toy_mean", 0, 3)
    with pytest.raises(UnknownVariant):
        toy_tasks.get("toy_mean@1")


def test_http_reset_of_unknown_or_uncertified_variants_is_4xx(partly_certified: Path) -> None:
    from fastapi.testclient import TestClient

    from sandbox_env.server import create_app

    strict = TaskRegistry(partly_certified, allow_uncertified=False)
    mock = MockSandbox()
    with TestClient(create_app(strict, mock)) as client:
        for body, status, code in [({"task": "oom_graph_leak@1000"}, 404, "UNKNOWN_TASK"),
                                   ({"task": "oom_graph_leak", "seed": 42}, 404, "UNKNOWN_TASK"),
                                   ({"task": "oom_graph_leak@2"}, 409, "VARIANT_NOT_CERTIFIED"),
                                   ({"task": "oom_graph_leak", "seed": 2}, 409, "VARIANT_NOT_CERTIFIED")]:
            r = client.post("/reset", json=body)
            assert r.status_code == status, (body, r.text)
            assert code in r.text
        ok = client.post("/reset", json={"task": "oom_graph_leak@0", "seed": 2})
        assert ok.status_code == 200
        eid = ok.json()["episode_id"]
        state = client.get("/state", params={"episode_id": eid}).json()
        assert state["family"] == "oom_graph_leak" and state["variant"] == 0 and state["repo_hash"]


def test_ws_reports_an_unknown_variant_with_the_task_error_code(open_tasks: TaskRegistry) -> None:
    from fastapi.testclient import TestClient

    from sandbox_env.server import create_app

    with TestClient(create_app(open_tasks, MockSandbox())) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"task": "oom_graph_leak@11"}})
        reply = ws.receive_json()
        assert reply["type"] == "error" and "UNKNOWN_TASK" in json.dumps(reply)


def test_mcp_reports_unknown_and_uncertified_variants_as_invalid_params(partly_certified: Path) -> None:
    from fastapi.testclient import TestClient

    from sandbox_env.server import create_app

    strict = TaskRegistry(partly_certified, allow_uncertified=False)
    with TestClient(create_app(strict, MockSandbox())) as client:
        for task, seed, code in [("oom_graph_leak@12", None, "UNKNOWN_TASK"),
                                 ("oom_graph_leak", 5, "VARIANT_NOT_CERTIFIED")]:
            params = {"task": task, **({"seed": seed} if seed is not None else {})}
            r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create",
                                          "params": params})
            err = r.json()["error"]
            assert err["code"] == -32602 and err["data"]["code"] == code, r.text


# --------------------------------------------------------------------------- splits, certification
def test_splits_are_listed(open_tasks: TaskRegistry, capsys: pytest.CaptureFixture[str]) -> None:
    from sandbox_env.cli import main

    test_ids = open_tasks.variant_ids("test")
    data = {f: open_tasks.variants_data(f) for f in FAMILIES}
    assert {f"{f}@{i}" for f, d in data.items() if d for i in d.test} == set(test_ids)
    assert {f"{f}@6" for f in FAMILIES} <= set(test_ids)
    assert len(open_tasks.variant_ids("all")) == sum(d.count for d in data.values() if d)
    assert "oom_graph_leak@0" in open_tasks.variant_ids("train")
    assert main(["--task-root", str(ROOT / "task_repos"), "tasks", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["oom_graph_leak"]["variants"] == 10 and rows["oom_graph_leak"]["test"] == [6, 7, 9]


def test_eval_split_plans_the_test_variants_and_records_them(open_tasks: TaskRegistry,
                                                             tmp_path: Path) -> None:
    from sandbox_env.eval import EvalConfig, make_agent, run_eval

    cfg = EvalConfig(agent="oracle", tasks=["oom_graph_leak"], split="test", mode="mock", out=tmp_path,
                     progress=False, concurrency=2)
    res = run_eval(cfg, open_tasks, make_agent("oracle"), sandbox=MockSandbox(), emit=lambda _: None)
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert sorted(r["task"] for r in records) == ["oom_graph_leak@6", "oom_graph_leak@7", "oom_graph_leak@9"]
    for r in records:
        assert r["family"] == "oom_graph_leak" and r["split"] == "test" and r["variant"] in (6, 7, 9)
        assert r["repo_hash"].startswith("sha256:") and r["success"], r.get("error")
    oracle = next(iter(res.summary.agents.values()))
    assert set(oracle.per_split) == {"test"} and oracle.per_split["test"].n == 3
    assert oracle.per_family["oom_graph_leak"].success.rate == 1.0
    from sandbox_env.eval.report import build_report

    md = build_report(tmp_path).markdown.read_text()
    section = md.split("## Success rate per family and split", 1)[1].split("\n## ", 1)[0]
    assert "| oom_graph_leak | oracle | 3 |" in section and "| test | oracle | 3 |" in section, section


def test_uncertified_variants_are_refused_until_recorded(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    copy_oom(root, "traces", CERTIFIED_FILE)
    strict = TaskRegistry(root, allow_uncertified=False)
    with pytest.raises(VariantNotCertified) as exc:
        strict.get("oom_graph_leak@4")
    assert exc.value.status == 409 and "SANDBOX_ENV_ALLOW_UNCERTIFIED" in str(exc.value)
    spec = TaskRegistry(root, allow_uncertified=True).get("oom_graph_leak@4")
    record_certified(root / "oom_graph_leak", 4, "sha256:0000000000000000", 5, "docker")  # wrong bytes
    with pytest.raises(VariantNotCertified):
        TaskRegistry(root, allow_uncertified=False).get("oom_graph_leak@4")
    record_certified(root / "oom_graph_leak", 4, spec.repo_hash, 5, "docker")
    assert TaskRegistry(root, allow_uncertified=False).get("oom_graph_leak@4").repo_hash == spec.repo_hash
    text = (root / "oom_graph_leak" / "variants_certified.toml").read_text()
    assert text.count("[[variant]]") == 1 and spec.repo_hash in text


def test_the_committed_certified_lists_parse(open_tasks: TaskRegistry) -> None:
    from sandbox_env.suite.variant_tasks import load_certified

    for family in FAMILIES:
        for row in load_certified(ROOT / "task_repos" / family):
            assert open_tasks.get(f"{family}@{row.index}").repo_hash == row.repo_hash, (family, row)


def test_certify_targets(open_tasks: TaskRegistry) -> None:
    assert parse_indices("all", 8) == [1, 2, 3, 4, 5, 6, 7] and parse_indices("1-3,6", 8) == [1, 2, 3, 6]
    with pytest.raises(ValueError):
        parse_indices("9", 8)
    assert certify_targets(open_tasks, ["oom_graph_leak"], "0-2") == ["oom_graph_leak", "oom_graph_leak@1",
                                                                       "oom_graph_leak@2"]
    assert certify_targets(open_tasks, ["oom_graph_leak@3"], None) == ["oom_graph_leak@3"]
    every = sum(d.count - 1 for f in FAMILIES if (d := open_tasks.variants_data(f)))
    assert every >= 9 * len(FAMILIES) and len(certify_targets(open_tasks, [], "all")) == every


def test_oracle_and_random_over_every_variant_in_mock_mode(open_tasks: TaskRegistry, tmp_path: Path) -> None:
    """Issue 14's CI eval: the oracle and the random agent over every train and every test
    variant of every family in mock mode, reported per family and per split."""
    from sandbox_env.eval import EvalConfig, make_agent, run_eval

    summaries = {}
    for agent in ("oracle", "random"):
        cfg = EvalConfig(agent=agent, split="all", mode="mock", out=tmp_path / agent, progress=False,
                         concurrency=2)
        res = run_eval(cfg, open_tasks, make_agent(agent), sandbox=MockSandbox(), emit=lambda _: None)
        summaries[agent] = next(iter(res.summary.agents.values()))
    oracle, rand = summaries["oracle"], summaries["random"]
    families = {p.parent.name for p in (ROOT / "task_repos").glob("*/variants.toml")}
    for s in (oracle, rand):
        assert set(s.per_family) == families
        assert set(s.per_split) == {"train", "test"}
        tests = sum(len(open_tasks.variants_data(f).test) for f in families)
        assert s.per_split["test"].n == tests and s.overall.n == 10 * len(families)
    # mock verdicts of variants are inferred through variant 0's classifier (never recorded):
    # the oracle's reference fix is recognised on every variant, the random agent solves none
    assert oracle.overall.success.rate == 1.0, oracle.overall.outcomes
    assert rand.overall.success.rate == 0.0, rand.overall.outcomes


def test_every_variant_is_certified_in_docker_for_its_current_bytes() -> None:
    """The committed certifications (docs/certification-variants.md, -train.md) cover every
    variant of every family in docker, for the bytes the generator emits today: the real
    registry serves each without the opt-in. Test variants are certified at K=5, train variants
    at K=3 at least (docker time is the scarce resource; variant 0 is certified at K=5 with its
    recordings). A change to a family's data that re-draws a variant voids its entry (the repo
    hash differs) and fails here until it is certified again."""
    strict = TaskRegistry(ROOT / "task_repos", allow_uncertified=False)
    for family in FAMILIES:
        rows = {c.index: c for c in load_certified(ROOT / "task_repos" / family)}
        data = strict.variants_data(family)
        assert data is not None
        assert sorted(rows) == list(range(1, data.count)), (family, sorted(rows))
        for i, c in rows.items():
            assert c.mode == "docker" and c.runs >= (5 if i in data.test else 3), (family, i, c)
            assert strict.get(f"{family}@{i}").repo_hash == c.repo_hash


def open_tasks_signature(family: str) -> str:
    return TaskRegistry(ROOT / "task_repos").get(family).failure.signature


def test_trl_rows_address_variants_and_refuse_uncertified_ones(partly_certified: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A TRL dataset row names a variant the two ways reset does (``task@N``, or ``task`` with
    ``seed``); the in-process tool env plays it in mock mode on the variant's own files, and a row
    naming a variant that is not certified fails the reset (the default registry, no opt-in)."""
    from sandbox_env.suite.tasks import TASK_ROOT_ENV
    from sandbox_env.trl import TriageToolEnv

    monkeypatch.setenv(TASK_ROOT_ENV, str(partly_certified))

    env = TriageToolEnv()
    for row in ({"task": "oom_graph_leak@6", "prompt": "x"}, {"task": "oom_graph_leak", "seed": 6}):
        text = env.reset(**row)
        assert env.task == "oom_graph_leak@6" and "# Incident (oom_graph_leak@6)" in text
        st = env._episode.state()
        assert (st.family, st.variant) == ("oom_graph_leak", 6)
        renamed = next(p for p in env.observation.current_files if p not in
                       TaskRegistry(ROOT / "task_repos").get("oom_graph_leak").repo_files())
        assert "def " in env.read_file(filename=renamed)  # a file only the variant has
        out = env.execute_bash(command="python train.py")
        assert env.observation.run_status == "failing" and re.search(
            open_tasks_signature("oom_graph_leak"), out)  # the variant's replayed failure
    with pytest.raises(VariantNotCertified):
        env.reset(task="oom_graph_leak", seed=3)  # a train variant this root has not certified
    env._close()


def test_a_heldout_batch_on_variants_is_scored_per_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch written on variants keeps ``<batch>/<N>/`` per variant, with patches against that
    variant's repo; ``sandbox-env heldout FAMILY`` scores each variant the batch covers."""
    from sandbox_env.cli import main
    from sandbox_env.quality.heldout import batch_dir, batch_variants, heldout_patches, score

    root = tmp_path / "tasks"
    copy_oom(root)
    reg = TaskRegistry(root, allow_uncertified=True)
    base, v3 = reg.get("oom_graph_leak"), reg.get("oom_graph_leak@3")
    d = root / "oom_graph_leak" / "heldout9" / "3"
    d.mkdir(parents=True)
    (d / "fix.patch").write_text(v3.solution_patch)  # the variant's own names: fails on variant 0
    (d / "labels.toml").write_text('[[patch]]\nfile = "fix.patch"\nlabel = "correct"\nexpect = "pass"\n')
    assert batch_variants(base, "heldout9") == [3] and batch_dir(v3, "heldout9") == d
    assert heldout_patches(base, "heldout9") == [] and len(heldout_patches(v3, "heldout9")) == 1
    rows = score([v3], None, MockSandbox().verify, log=lambda _: None, batch="heldout9")
    assert [(r.task, r.file, r.mock_passed, r.mock_unsure) for r in rows] == \
        [("oom_graph_leak@3", "fix.patch", True, False)]
    out = tmp_path / "h.md"
    assert main(["--task-root", str(root), "heldout", "--tasks", "oom_graph_leak", "--batch", "heldout9",
                 "--mode", "none", "--out", str(out)]) == 0
    assert "oom_graph_leak@3" in out.read_text()
    monkeypatch.chdir(tmp_path)  # without --out the report is printed, and no curated doc is overwritten
    capsys.readouterr()
    assert main(["--task-root", str(root), "heldout", "--tasks", "oom_graph_leak", "--batch", "heldout9",
                 "--mode", "none"]) == 0
    assert "oom_graph_leak@3" in capsys.readouterr().out and not (tmp_path / "docs").exists()


def test_a_whole_family_may_be_held_out_but_variant_0_never_tests_alone() -> None:
    """A test family (train = []) puts every variant, the folder itself included, in the test
    split; otherwise variant 0 belongs to train."""
    from sandbox_env.suite.variants import VariantsData

    held = VariantsData(count=4, train=[], test=[0, 1, 2, 3])
    assert held.held_out and held.split_of(0) == "test"
    assert not VariantsData(count=4, train=[0, 1], test=[2, 3]).held_out
    with pytest.raises(ValueError, match="belongs to the train split"):
        VariantsData(count=4, train=[1], test=[0, 2, 3])


def test_the_second_prose_renames_apply_except_in_draws_kept_before(tmp_path: Path) -> None:
    """A README names the variant's files and classes, and a module qualifying a class is renamed;
    a draw kept before that (no prose key in variants_drawn.toml) keeps its bytes."""
    from sandbox_env.suite.variants import PROSE_VERSION, Draw, Renamer, load_draws, record_draw

    files = {"README.md": "Settings live in `config.py` (`Config`), see config.Config.\n", "a.py": "x = 1\n"}
    assert Renamer({"Config": "JobConfig"}, {"config": "run_config"}).files(files)["README.md"] == (
        "Settings live in `run_config.py` (`JobConfig`), see run_config.JobConfig.\n")
    old = Renamer({"Config": "JobConfig"}, {"config": "run_config"}, prose=1)
    assert old.files(files)["README.md"] == files["README.md"]
    assert old.prose("see config.Config") == "see config.JobConfig"  # no module qualifier either
    assert Draw(index=1).prose == PROSE_VERSION == 3
    (tmp_path / "variants_drawn.toml").write_text(
        "[[variant]]\nindex = 3\nplacement = \"\"\n\n[[variant]]\nindex = 5\nprose_v2 = true\n")
    assert load_draws(tmp_path)[3].prose == 1 and load_draws(tmp_path)[5].prose == 2
    record_draw(tmp_path, Draw(index=4))
    kept = load_draws(tmp_path)
    assert (kept[3].prose, kept[4].prose, kept[5].prose) == (1, 3, 2)


def test_the_third_prose_renames_follow_dotted_references_and_log_fields() -> None:
    """Version 3: a distinctive module qualifying a function (``compile_utils.compile_model``) and a
    distinctive name as a log format's ``name=`` field follow the renames; a plain module before a
    method (``model.eval()``), f-strings and version 2 stay as they were; the inverse undoes it all."""
    from sandbox_env.suite.variants import Renamer

    names = {"static_shapes": "static_compile", "compile_model": "build_compiled"}
    modules = {"compile_utils": "accel", "model": "net"}
    src = ('import compile_utils\nlog.info("static_shapes=%s", cfg.static_shapes)\nx = f"static_shapes={y}"\n'
           "# the model goes through compile_utils.compile_model; model.eval() for validation\n")
    out = Renamer(names, modules).source(src)
    assert out == ('import accel\nlog.info("static_compile=%s", cfg.static_compile)\n'
                   'x = f"static_shapes={y}"\n'
                   "# the model goes through accel.build_compiled; model.eval() for validation\n")
    assert Renamer(names, modules).inverse().source(out) == src
    readme = "Run it through compile_utils.compile_model (static_shapes=True).\n"
    assert Renamer(names, modules).prose(readme) == (
        "Run it through accel.build_compiled (static_compile=True).\n")
    v2 = Renamer(names, modules, prose=2)
    assert v2.prose("compile_utils.setup") == "compile_utils.setup"
    assert v2.source(src).splitlines()[1] == 'log.info("static_shapes=%s", cfg.static_compile)'


def test_a_port_wins_where_the_original_still_applies(open_tasks: TaskRegistry) -> None:
    """oom's process-wide running-sum mode applies unchanged after the loss_lists placement but does
    nothing there (losses go into lists); its port for that placement is what the variant gets."""
    placed = open_tasks.get("oom_graph_leak@8")
    assert placed.variant is not None and placed.variant.placement == "loss_lists"
    text = (placed.root / "patches" / "cheat_global_function_mode.patch").read_text()
    assert "detach_()" in text
    plain = open_tasks.get("oom_graph_leak@1")
    assert "detach_()" not in (plain.root / "patches" / "cheat_global_function_mode.patch").read_text()
