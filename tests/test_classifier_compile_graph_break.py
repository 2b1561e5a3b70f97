"""compile_graph_break's mock classifier on states written for it (not the labelled patches):
correct fixes in other idioms, wrong fixes, and valid code it must not guess about (UNSURE)."""

from __future__ import annotations

import re

import pytest

from sandbox_env.mock_analysis import UNSURE
from sandbox_env.tasks import TaskRegistry

from .conftest import ROOT

TASK = TaskRegistry(ROOT / "task_repos").get("compile_graph_break")
BODY = re.compile(
    r"(        peak = h\.abs\(\)\.amax\(\)\n        if peak > self\.max_update:\n"
    r"            h = h \* \(self\.max_update / peak\)\n        return h\n)"
)


def state(body: str | None = None, **edits: tuple[str, str] | str) -> dict[str, str]:
    """The original repo with limit_update's body replaced and (old, new) edits per file;
    a plain string creates or replaces a file."""
    files = dict(TASK.repo_files())
    if body is not None:
        indented = "".join(f"        {ln}\n" if ln else "\n" for ln in body.strip("\n").splitlines())
        files["model.py"], n = BODY.subn(lambda _: indented, files["model.py"])
        assert n == 1
    for name, edit in edits.items():
        path = name.replace("__", "/") + ("" if "." in name else ".py")
        if isinstance(edit, str):
            files[path] = edit
        else:
            assert edit[0] in files[path], (path, edit[0])
            files[path] = files[path].replace(*edit)
    return files


L, P = "self.max_update", "peak = h.abs().amax()"
W = f"return torch.where(peak > {L}, h * ({L} / peak), h)"
EAGER_LOOP = ("logits = compiled(x)", "logits = model(x)")

CASES = {
    # ---- correct fixes in other idioms
    "minimum_with_ones": (
        "fixed",
        state(f"{P}\nreturn h * torch.minimum(torch.ones_like(peak), {L} / peak)"),
    ),
    "divide_by_clamped_ratio": ("fixed", state(f"{P}\nreturn h / torch.clamp(peak / {L}, min=1.0)")),
    "where_reversed_condition": (
        "fixed",
        state(f"{P}\nreturn torch.where(peak <= {L}, h, h * ({L} / peak))"),
    ),
    "builtin_min_of_tensor": ("fixed", state(f"{P}\nreturn h * min(1.0, {L} / peak)")),
    "lerp_blend": (
        "fixed",
        state(f"{P}\nover = (peak > {L}).float()\nreturn torch.lerp(h, h * ({L} / peak), over)"),
    ),
    "cond_named_branches": (
        "fixed",
        state(
            f"{P}\n\ndef shrink(h, peak):\n    return h * ({L} / peak)\n\n"
            "def keep(h, peak):\n    return h.clone()\n\n"
            "return torch.cond(peak > self.max_update, shrink, keep, (h, peak))"
        ),
    ),
    "helper_in_other_file": (
        "fixed",
        state(
            "return bounded(h, self.max_update)",
            model=("from config import Config\n", "from config import Config\nfrom limits import bounded\n"),
            limits="import torch\n\n\ndef bounded(h, limit):\n    peak = torch.amax(torch.abs(h))\n"
            "    factor = torch.where(peak > limit, limit / peak, torch.ones_like(peak))\n"
            "    return h * factor\n",
        ),
    ),
    "buffer_and_clamp_min": (
        "fixed",
        state(
            "return h * (self.limit / h.abs().max().clamp_min(self.limit))",
            model=(
                "self.max_update = max_update\n",
                "self.max_update = max_update\n"
                '        self.register_buffer("limit", torch.tensor(max_update))\n',
            ),
        ),
    ),
    # ---- wrong fixes
    "elementwise_clip": ("wrong_numerics", state(f"return h.clamp(-{L}, {L})")),
    "detached_denominator": (
        "wrong_numerics",
        state(f"{P}\nreturn torch.where(peak > {L}, h * ({L} / peak.detach()), h)"),
    ),
    "peak_under_no_grad": (
        "wrong_numerics",
        state(f"with torch.no_grad():\n    {P}\n{W}"),
    ),
    "l2_norm_as_peak": (
        "wrong_numerics",
        state(f"peak = h.norm()\n{W}"),
    ),
    "skip_limit_when_compiling": (
        "wrong_numerics",
        state(f"if torch._dynamo.is_compiling():\n    return h * 1.0\n{P}\n{W}"),
    ),
    "bool_of_tensor": ("bug", state(f"{P}\nif bool(peak > {L}):\n    h = h * ({L} / peak)\nreturn h")),
    "float_peak_in_where": (
        "compile_error",
        state(
            f"peak = float(h.abs().amax())\nreturn torch.where(torch.tensor(peak > {L}), h * ({L} / peak), h)"
        ),
    ),
    "cond_branch_aliases_input": (
        "compile_error",
        state(f"{P}\nreturn torch.cond(peak > {L}, lambda h, p: h * ({L} / p), lambda h, p: h, (h, peak))"),
    ),
    "explicit_graph_break": (
        "compile_error",
        state(f"{P}\ntorch._dynamo.graph_break()\n{W}"),
    ),
    "disable_call_form": (
        "compile_error",
        state(
            None,
            model=(
                "return x + self.limit_update(h)",
                "return x + torch.compiler.disable(self.limit_update)(h)",
            ),
        ),
    ),
    "fixed_model_eager_loop": (
        "not_compiled",
        state(f"{P}\n{W}", train=EAGER_LOOP),
    ),
    # ---- valid code the analysis does not follow: it must not guess
    "try_except_in_forward": (
        UNSURE,
        state(f"try:\n    {P}\nexcept RuntimeError:\n    return h\n{W}"),
    ),
    "unknown_torch_op": (
        UNSURE,
        state(f"peak = torch.quantile(h.abs().flatten(), 1.0)\n{W}"),
    ),
    "fixed_model_restructured_training": (
        UNSURE,
        state(
            f"{P}\n{W}",
            train=(
                "            logits = compiled(x)\n            loss = F.cross_entropy(logits, y)\n",
                "            loss = step_loss(compiled, x, y)\n",
            ),
        ),
    ),
    "fixed_model_other_data": (
        UNSURE,
        state(f"{P}\n{W}", data_loader=("* 0.75)", "* 0.5)")),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_classifier_label(name: str) -> None:
    want, files = CASES[name]
    assert TASK.classifier(files) == want


def test_the_cases_span_every_kind() -> None:
    wants = [w for w, _ in CASES.values()]
    assert wants.count("fixed") >= 5 and wants.count(UNSURE) >= 3 and len(CASES) >= 15
