"""Seeded variants of a task family: a variant's files from (family, integer), and how they were made.

Variant 0 is the family's folder byte for byte. Variant N >= 1 is a :class:`Draw` (its choices)
applied to variant 0, over the data of ``task_repos/<family>/variants.toml``:

1. a placement (optional): a patch of ``variants/`` that moves or rewrites the buggy code,
   with its own reference fix;
2. sizes: new defaults of config fields (only when the default is still variant 0's literal);
3. renames: modules (file names and import statements) and identifiers, on Python NAME tokens
   (``tokenize``), never inside string literals; comments and triple-quoted prose follow.

A variant that exists (certified) keeps its draw in ``variants_drawn.toml``, so no later edit of
the tables re-draws it. Any other variant draws each choice from its own stream,
``random.Random(f"{family}:{N}:{choice}")``, so an edit re-draws only the choices it touches; a
placement may pin the indices that show it.

Labelled patches follow: a patch is applied to the (placed) variant-0 files, the same
transform is applied to the result, and the diff against the transformed repo is the
variant's patch; a patch that no longer applies is dropped and named in the manifest.
:func:`to_base` inverts the renames and sizes of a variant workspace (for the variant-0
classifier) or answers None when a variant-0 name already occurs in it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import random
import re
import string
import tokenize
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..workspace import WorkspaceError, apply_patch, unified_diff

VARIANTS_FILE = "variants.toml"
CERTIFIED_FILE = "variants_certified.toml"
DRAWN_FILE = "variants_drawn.toml"
GENERATOR_VERSION = 2  # 2: a stream per choice, and kept draws (1: one stream for every choice)
# How prose (comments, docstrings, READMEs, the task's texts) follows the renames. A kept draw
# keeps the version it was certified with, so a certified variant's bytes never change.
#   1: distinctive names as words, plain names before ``(``, modules as ``name.py``
#   2: non-Python files as prose too; a module where it qualifies a class or constant
#   3: a distinctive module (``compile_utils``) qualifying anything (``compile_utils.build``);
#      a distinctive name as a ``name=`` field in any string literal (a log line's format)
PROSE_VERSION = 3
Split = Literal["train", "test"]
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FSTRING = re.compile(r"""(?<![\w])[rR]?[fF][rR]?("{3}|'{3}|"|')(.*?)\1""", re.S)


class VariantError(Exception):
    """A family's variants.toml or placement patch is malformed (a maintainer's error)."""


# --------------------------------------------------------------------------- the data file
class Placement(BaseModel):
    """Where the bug sits or how it is written: a patch against repo/ and its reference fix."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9_]+$")
    patch: str  # relative to the family folder, e.g. variants/helper.patch
    solution: str  # the reference fix of the placed repo (a patch against repo/ + placement)
    description: str = ""
    signal_files: list[str] = Field(default_factory=list)  # files the placement adds to task.toml's
    variants: list[int] = Field(default_factory=list)  # indices pinned to this placement (not drawn)
    # a phrase of variant 0's prose (hints, explanation, ...) -> what the placed repo's prose
    # says instead: prose that quotes or describes the code the placement rewrites
    prose: dict[str, str] = Field(default_factory=dict)


class VariantsData(BaseModel):
    """``task_repos/<family>/variants.toml``: how many variants, their split, the transforms."""

    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=1, le=1000)
    train: list[int]
    test: list[int] = Field(min_length=2)
    modules: dict[str, list[str]] = Field(default_factory=dict)  # module -> candidate names
    names: dict[str, list[str]] = Field(default_factory=dict)  # identifier -> candidate names
    sizes: dict[str, list[int | float]] = Field(default_factory=dict)  # config field -> defaults
    # a phrase of variant 0's prose -> a template over config fields that renders it for variant 0
    # (e.g. "393k rows" = "{n_val / 1000:.0f}k rows"): the prose's numbers follow the sizes
    prose: dict[str, str] = Field(default_factory=dict)
    placement: list[Placement] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> VariantsData:
        seen = self.train + self.test
        if sorted(seen) != list(range(self.count)):
            raise ValueError(f"train + test must list every variant 0..{self.count - 1} once")
        if self.train and 0 not in self.train:
            raise ValueError("variant 0 (the family's folder) belongs to the train split, unless the "
                             "whole family is held out (train = [], every variant in test)")
        pinned = [i for p in self.placement for i in p.variants]
        if len(pinned) != len(set(pinned)) or not all(1 <= i < self.count for i in pinned):
            raise ValueError(f"placement variants must be distinct indices 1..{self.count - 1}, got {pinned}")
        for key, cands in {**self.modules, **self.names}.items():
            bad = [c for c in cands if not c.isidentifier() or c == key]
            if not cands or bad:
                raise ValueError(f"{key}: candidates must be new identifiers, got {cands}")
        return self

    @property
    def held_out(self) -> bool:
        """A test family: every variant, the folder itself included, is in the test split (never
        used to tune the shared analyses or the kit), for measuring generalisation to a bug type."""
        return not self.train

    def split_of(self, index: int) -> Split:
        return "test" if index in self.test else "train"


def load_variants_data(family_root: Path) -> VariantsData | None:
    """The family's variants.toml, or None when the family declares no variants."""
    path = family_root / VARIANTS_FILE
    if not path.exists():
        return None
    try:
        return VariantsData.model_validate(tomllib.loads(path.read_text()))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise VariantError(f"{path}: {exc}") from exc


class Draw(BaseModel):
    """The choices that make variant N from variant 0 (kept in ``variants_drawn.toml`` once
    the variant is certified): its placement, its sizes (config field -> default, variant-0
    names), its module and identifier renames."""

    model_config = ConfigDict(extra="forbid")
    index: int = Field(ge=1)
    placement: str = ""  # "" = none
    sizes: dict[str, int | float] = Field(default_factory=dict)
    modules: dict[str, str] = Field(default_factory=dict)
    names: dict[str, str] = Field(default_factory=dict)
    prose: int = Field(default=PROSE_VERSION, ge=1, le=PROSE_VERSION)  # PROSE_VERSION's levels

    @model_validator(mode="before")
    @classmethod
    def _legacy_prose(cls, data: Any) -> Any:
        """A row kept before the versions: ``prose_v2 = true`` is 2, no key at all is 1."""
        if isinstance(data, dict) and "prose_v2" in data:
            rest = {k: v for k, v in data.items() if k != "prose_v2"}
            data = {**rest, "prose": 2 if data["prose_v2"] else 1}
        return data

    @classmethod
    def of(cls, manifest: VariantManifest) -> Draw:
        """The draw a generated variant was made from (its manifest's transforms)."""
        return cls(index=manifest.index, placement=manifest.placement or "",
                   sizes={f: _value(new) for f, (_, new) in manifest.sizes.items()},
                   modules=manifest.module_renames, names=manifest.renames, prose=manifest.prose)


def load_draws(family_root: Path) -> dict[int, Draw]:
    """The family's kept draws (``variants_drawn.toml``), by index."""
    path = family_root / DRAWN_FILE
    if not path.exists():
        return {}
    try:
        rows = [Draw.model_validate(r if "prose" in r or "prose_v2" in r else {**r, "prose": 1})
                for r in tomllib.loads(path.read_text()).get("variant", [])]
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise VariantError(f"{path}: {exc}") from exc
    return {d.index: d for d in rows}


def record_draw(family_root: Path, draw: Draw) -> Path:
    """Keep ``draw`` (add or replace its index) in the family's variants_drawn.toml."""
    rows = {**load_draws(family_root), draw.index: draw}

    def table(values: dict[str, Any]) -> str:
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in sorted(values.items())) + " }"

    lines = ["# The draw of every certified variant (sandbox-env certify --record-certified keeps it):",
             "# its bytes are this draw applied to variant 0, whatever variants.toml's tables say now.", ""]
    for d in sorted(rows.values(), key=lambda d: d.index):
        lines += ["[[variant]]", f"index = {d.index}", f"placement = {_toml(d.placement)}",
                  f"sizes = {table(d.sizes)}", f"modules = {table(d.modules)}",
                  f"names = {table(d.names)}", f"prose = {d.prose}", ""]
    path = family_root / DRAWN_FILE
    path.write_text("\n".join(lines))
    return path


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


# --------------------------------------------------------------------------- the manifest
class Transform(BaseModel):
    kind: Literal["placement", "size", "rename_module", "rename"]
    old: str
    new: str
    detail: str = ""


class DroppedPatch(BaseModel):
    file: str
    reason: str


class VariantManifest(BaseModel):
    """How one variant was made: written beside its materialised folder as variant.json."""

    family: str
    index: int
    split: Split
    generator_version: int = GENERATOR_VERSION
    transforms: list[Transform] = Field(default_factory=list)
    repo_hash: str
    patches_kept: list[str] = Field(default_factory=list)
    patches_dropped: list[DroppedPatch] = Field(default_factory=list)
    solution: str = "solution.patch"
    incident_report: str = ""  # how the incident report was made (Family._task_toml)
    draw: Literal["kept", "seeded", "none"] = "none"  # variants_drawn.toml's, from the seed, or none (0)
    prose: int = 1  # the prose renames' version it was made with (Draw.prose)
    base_root: str = ""  # the family's folder on this machine (never written into the repo)

    @model_validator(mode="before")
    @classmethod
    def _legacy_prose(cls, data: Any) -> Any:
        return Draw._legacy_prose(data)

    @property
    def renames(self) -> dict[str, str]:
        return {t.old: t.new for t in self.transforms if t.kind == "rename"}

    @property
    def module_renames(self) -> dict[str, str]:
        return {t.old: t.new for t in self.transforms if t.kind == "rename_module"}

    @property
    def sizes(self) -> dict[str, tuple[str, str]]:
        """Config field (variant-0 name) -> (variant-0 literal, variant literal)."""
        return {t.old: tuple(t.detail.split(" -> ", 1)) for t in self.transforms  # type: ignore[misc]
                if t.kind == "size"}

    @property
    def placement(self) -> str | None:
        return next((t.new for t in self.transforms if t.kind == "placement"), None)


class Variant(BaseModel):
    """A generated variant: its files, patches, task data and manifest (nothing on disk yet)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    manifest: VariantManifest
    repo: dict[str, str]
    base_repo: dict[str, str]  # variant 0's names and sizes, the placement applied (to_base's image)
    solution_patch: str
    patches: dict[str, str]  # kept labelled patch file -> its transformed text
    task_toml: dict[str, Any]  # task.toml data with the renames applied


def repo_hash(files: dict[str, str]) -> str:
    """Exact content hash of a repo (every byte; the identity a certification is about)."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return "sha256:" + h.hexdigest()[:16]


# --------------------------------------------------------------------------- the renamer
class Renamer:
    """Module and identifier renames (and their inverse) on Python NAME tokens.

    Identifiers are renamed at every NAME token (attribute accesses included: candidates are
    names only the repo defines); module names only where not preceded by a dot (so
    ``torch._dynamo.config`` stays) and in file paths. Comments and triple-quoted strings get
    the prose form: distinctive names (with ``_`` or a capital) as words, plain names before
    ``(``, modules as ``name.py``.
    """

    def __init__(self, names: dict[str, str], modules: dict[str, str], prose: int = PROSE_VERSION,
                 distinct: frozenset[str] | None = None) -> None:
        self.names, self.modules, self.prose_version = names, modules, prose
        # version 3's renames key on distinctive variant-0 names (an inverse gets their images,
        # so it undoes exactly what the forward renames did)
        self.distinct = distinct if distinct is not None else frozenset(
            [n for n in names if "_" in n or not n.islower()] + [m for m in modules if "_" in m])
        self._prose = self._prose_pattern()
        fields = [re.escape(n) for n in names if n in self.distinct] if prose >= 3 else []
        self._fields = re.compile(r"(?<![\w.])(" + "|".join(fields) + r")(?==)") if fields else None
        self._memo: dict[str, str] = {}  # text -> renamed (labelled states share most files)
        self._clashes: dict[str, str | None] = {}  # text -> why it cannot be renamed back

    def inverse(self) -> Renamer:
        image = {**self.names, **self.modules}
        return Renamer({v: k for k, v in self.names.items()}, {v: k for k, v in self.modules.items()},
                       self.prose_version, frozenset(image[k] for k in self.distinct))

    def path(self, path: str) -> str:
        stem, dot, ext = path.rpartition(".")
        if dot and ext == "py" and "/" not in stem and stem in self.modules:
            return f"{self.modules[stem]}.py"
        return path

    def files(self, files: dict[str, str]) -> dict[str, str]:
        """Python files renamed as code; from prose version 2 every other file (a README, notes)
        as prose too, so it names the variant's files and identifiers."""
        def other(t: str) -> str:
            return self.prose(t) if self.prose_version >= 2 else t

        return {self.path(p): (self.source(t) if p.endswith(".py") else other(t)) for p, t in files.items()}

    def dotted(self, ref: str) -> str:
        """``module:attr`` of task.toml's [entry]."""
        mod, _, attr = ref.partition(":")
        mod = self.modules.get(mod, mod)
        return f"{mod}:{self.names.get(attr, attr)}" if attr else mod

    def source(self, text: str) -> str:
        """``text`` with its NAME tokens renamed (unchanged when it does not tokenize)."""
        if text not in self._memo:
            if len(self._memo) > 512:
                self._memo.clear()
            self._memo[text] = self._source(text)
        return self._memo[text]

    def _source(self, text: str) -> str:
        tokens = _tokens(text)
        if tokens is None:
            return text
        lines = text.splitlines(keepends=True)
        edits: list[tuple[int, int, int, str]] = []  # row, col, end col, new text (one line)
        module_at = _module_positions(tokens, self.modules)
        for i, tok in enumerate(tokens):
            new: str | None = None
            if tok.type == tokenize.NAME:
                if i in module_at:
                    new = self.modules[tok.string]
                elif tok.string in self.names:
                    new = self.names[tok.string]
            elif tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and _is_prose(tok.string)):
                replaced = self.prose(tok.string)
                if replaced != tok.string:
                    new = replaced
            elif tok.type == tokenize.STRING and self._fields is not None and not _is_fstring(tok.string):
                replaced = self._fields.sub(lambda m: self.names[m.group(0)], tok.string)
                if replaced != tok.string:  # a log format's ``name=%s`` follows the renamed field
                    new = replaced
            if new is None:
                continue
            if tok.start[0] == tok.end[0]:
                edits.append((tok.start[0], tok.start[1], tok.end[1], new))
                continue
            for k, (old_line, new_line) in enumerate(zip(tok.string.split("\n"), new.split("\n"),
                                                         strict=True)):  # a multi-line string
                col = tok.start[1] if k == 0 else 0
                edits.append((tok.start[0] + k, col, col + len(old_line), new_line))
        for row, col, end, new in sorted(edits, reverse=True):
            line = lines[row - 1]
            lines[row - 1] = line[:col] + new + line[end:]
        return "".join(lines)

    def _prose_pattern(self) -> re.Pattern[str] | None:
        # a module never after a dot (``torch._dynamo.config``); a name also as an attribute
        # (``self.max_update``), as the source renames it there too
        alts = [r"(?<![\w.])" + re.escape(m) + r"\.py\b" for m in self.modules]
        # a module qualifying one of its classes or constants (``config.JobConfig``,
        # ``activations.NONLINEARITIES``); a lowercase attribute (``model.eval()``) is more
        # likely a variable's method than a module's function, so it stays (from version 3 a
        # distinctive module, ``compile_utils.compile_model``, qualifying anything is renamed)
        if self.prose_version >= 2:
            anything = {m for m in self.modules if self.prose_version >= 3 and m in self.distinct}
            alts += [r"(?<![\w.])" + re.escape(m) + (r"(?=\.[A-Za-z_])" if m in anything else r"(?=\.[A-Z])")
                     for m in self.modules]
        for old in self.names:
            end = r"\b" if ("_" in old or not old.islower()) else r"(?=\()"
            alts.append(r"(?<!\w)" + re.escape(old) + end)
        return re.compile("(" + "|".join(alts) + ")") if alts else None

    def prose(self, text: str) -> str:
        """Prose (incident report, hints, comments): distinctive names and ``module.py``."""
        if self._prose is None:
            return text

        def sub(m: re.Match[str]) -> str:
            word = m.group(0)
            if word.endswith(".py") and word[:-3] in self.modules:
                return self.modules[word[:-3]] + ".py"
            return self.names.get(word, self.modules.get(word, word))

        return self._prose.sub(sub, text)

    def collision(self, files: dict[str, str]) -> str | None:
        """A name this renamer produces from that already occurs in ``files`` (as a NAME token
        or a module path), which an inverse could not tell apart: its description, or None."""
        for made in self.modules.values():
            if f"{made}.py" in files:
                return f"{made}.py exists, which this variant names otherwise"
        for path, text in files.items():
            if path.endswith(".py"):
                if text not in self._clashes:
                    if len(self._clashes) > 512:
                        self._clashes.clear()
                    self._clashes[text] = self._clash(text)
                if self._clashes[text] is not None:
                    return f"{path}: {self._clashes[text]}"
        return None

    def _clash(self, text: str) -> str | None:
        tokens = _tokens(text)
        if tokens is None:
            return None
        for i in _module_positions(tokens, {v: k for k, v in self.modules.items()}):
            return f"imports {tokens[i].string!r}, which this variant names otherwise"
        produced = {v: k for k, v in self.names.items()}
        for tok in tokens:
            if tok.type == tokenize.NAME and tok.string in produced:
                return f"{tok.string!r} occurs, which this variant names {produced[tok.string]!r}"
        return None


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def _module_positions(tokens: list[tokenize.TokenInfo], modules: dict[str, str]) -> set[int]:
    """Indices of the tokens naming one of ``modules`` as a module: ``from M import``,
    ``import M`` (not ``import M as``'s alias) and, where ``import M`` binds it, the
    non-attribute uses of M in that file. A local variable that shares a module's name
    (``model = build_model()``) is not a module reference and stays."""
    found: set[int] = set()
    bound: set[str] = set()
    sig = [i for i, t in enumerate(tokens) if t.type not in (tokenize.NL, tokenize.COMMENT)]
    line_start = True
    for k, i in enumerate(sig):
        tok = tokens[i]
        nxt = tokens[sig[k + 1]] if k + 1 < len(sig) else None
        if line_start and tok.type == tokenize.NAME and tok.string == "from" and nxt is not None:
            if nxt.string in modules and k + 2 < len(sig) and tokens[sig[k + 2]].string == "import":
                found.add(sig[k + 1])
        elif line_start and tok.type == tokenize.NAME and tok.string == "import":
            j = k + 1
            while j < len(sig) and tokens[sig[j]].type == tokenize.NAME:
                name, after = tokens[sig[j]], tokens[sig[j + 1]] if j + 1 < len(sig) else None
                if name.string in modules and (after is None or after.string != "."):
                    found.add(sig[j])
                    if not (after is not None and after.string == "as"):
                        bound.add(name.string)
                j += 1
                while j < len(sig) and tokens[sig[j]].string not in (",",) and \
                        tokens[sig[j]].type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
                    j += 1
                if j < len(sig) and tokens[sig[j]].string == ",":
                    j += 1
                else:
                    break
        line_start = tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) or \
            (tok.type == tokenize.OP and tok.string == ";")
    if bound:
        for k, i in enumerate(sig):
            tok = tokens[i]
            prev = tokens[sig[k - 1]] if k else None
            dotted = prev is not None and prev.string == "."
            if tok.type == tokenize.NAME and tok.string in bound and not dotted:
                found.add(i)
    return found


def _is_fstring(literal: str) -> bool:
    return "f" in literal[:literal.index(literal.lstrip("rRbBuUfF")[0])].lower()


def _is_prose(literal: str) -> bool:
    body = literal.lstrip("rRbBuU")
    return body.startswith(('"""', "'''")) and not literal[:2].lower().startswith("f")


# --------------------------------------------------------------------------- sizes
def _config_path(task_toml: dict[str, Any]) -> tuple[str, str]:
    ref = task_toml.get("entry", {}).get("config", "config:Config")
    mod, _, cls = ref.partition(":")
    return f"{mod}.py", cls


def _default_node(text: str, cls: str, field: str) -> ast.expr | None:
    """The default expression of ``cls.field`` (a dataclass-style annotated field) in ``text``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for stmt in node.body:
                if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                        and stmt.target.id == field and stmt.value is not None):
                    return stmt.value
    return None


def set_default(text: str, cls: str, field: str, old: str, new: str) -> str:
    """``text`` with ``cls.field``'s default literal replaced by ``new`` if it is ``old``."""
    v = _default_node(text, cls, field)
    if v is None or v.lineno != v.end_lineno:
        return text
    lines = text.splitlines(keepends=True)
    line = lines[v.lineno - 1]
    start, end = _char_col(line, v.col_offset), _char_col(line, v.end_col_offset or 0)
    if line[start:end] != old:
        return text
    lines[v.lineno - 1] = line[:start] + new + line[end:]
    return "".join(lines)


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode()[:byte_col].decode(errors="ignore"))


def _literal(value: int | float) -> str:
    return repr(value)


# --------------------------------------------------------------------------- prose numbers
PROSE_KEYS = ("incident_report", "reference_explanation", "notes")
_ARITH = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Add, ast.Sub,
          ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.USub)


def render_prose(template: str, values: dict[str, Any]) -> str:
    """``template`` with each ``{expression:format}`` computed from ``values`` (config fields).

    Expressions are arithmetic over field names and numbers only (no calls, no attributes)."""
    out = []
    for literal, expr, spec, conv in string.Formatter().parse(template):
        out.append(literal)
        if expr is None:
            continue
        if conv:
            raise VariantError(f"prose template {template!r}: no conversions (!{conv})")
        try:
            tree = ast.parse(expr, mode="eval")
        except SyntaxError as exc:
            raise VariantError(f"prose template {template!r}: {expr!r} is not an expression") from exc
        bad = [type(n).__name__ for n in ast.walk(tree) if not isinstance(n, _ARITH)]
        missing = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(values))
        if bad or missing:
            what = f"unsupported {', '.join(bad)}" if bad else f"unknown {', '.join(missing)}"
            raise VariantError(f"prose template {template!r}: only arithmetic over config fields ({what})")
        value = eval(compile(tree, "<prose>", "eval"), {"__builtins__": {}}, dict(values))
        out.append(format(value, spec or ""))
    return "".join(out)


def map_prose(data: dict[str, Any], fn: Callable[[str], str]) -> None:
    """Apply ``fn`` to every prose text of task.toml data, in place (the one list of them)."""
    for key in PROSE_KEYS:
        if isinstance(data.get(key), str):
            data[key] = fn(data[key])
    data["hints"] = [fn(h) for h in data.get("hints", [])]
    if "failure" in data:
        data["failure"]["summary"] = fn(data["failure"].get("summary", ""))


def _prose_texts(task_toml: dict[str, Any]) -> list[str]:
    texts: list[str] = []

    def keep(text: str) -> str:
        texts.append(text)
        return text

    map_prose(_deep_copy(task_toml), keep)
    return texts


# --------------------------------------------------------------------------- generation
class Family:
    """One family's folder and its variants data; generates variant N."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = root.name
        data = load_variants_data(root)
        if data is None:
            raise VariantError(f"{root.name} declares no variants ({VARIANTS_FILE})")
        self.data = data
        self.draws = load_draws(root)  # index -> the draw a certified variant keeps
        self.task_toml = tomllib.loads((root / "task.toml").read_text())
        labels = root / "patches" / "labels.toml"
        self.labels = tomllib.loads(labels.read_text()).get("patch", []) if labels.exists() else []
        self._check_prose()

    def config_defaults(self, files: dict[str, str]) -> dict[str, Any]:
        """The literal defaults of the fields ``[sizes]`` and ``[prose]`` use, as in ``files``."""
        cfg_path, cfg_cls = _config_path(self.task_toml)
        fields = set(self.data.sizes)
        for template in self.data.prose.values():
            fields |= {n.id for _, expr, _, _ in string.Formatter().parse(template) if expr
                       for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
        out: dict[str, Any] = {}
        for field in sorted(fields):
            lit = _default_literal(files.get(cfg_path, ""), cfg_cls, field)
            if lit is not None:
                out[field] = _value(lit)
        return out

    def _check_prose(self) -> None:
        """Every ``[prose]`` phrase and every placement's prose phrase occurs in variant 0's
        prose, and each ``[prose]`` template renders its phrase for variant 0."""
        texts = "\n".join(_prose_texts(self.task_toml))
        for choice in self.data.placement:
            for phrase in choice.prose:
                if phrase not in texts:
                    raise VariantError(f"{self.name}: placement {choice.name}'s prose phrase {phrase!r} "
                                       "is not in task.toml's prose")
        if not self.data.prose:
            return
        try:
            values = self.config_defaults(self.repo())
        except SyntaxError as exc:
            raise VariantError(f"{self.name}: a [prose] template is not an expression: {exc}") from exc
        for phrase, template in self.data.prose.items():
            if phrase not in texts:
                raise VariantError(f"{self.name}: [prose] phrase {phrase!r} is not in task.toml's prose")
            if (got := render_prose(template, values)) != phrase:
                raise VariantError(f"{self.name}: [prose] {template!r} renders {got!r} for variant 0, "
                                   f"not {phrase!r}")

    def repo(self) -> dict[str, str]:
        repo = self.root / "repo"
        skip = {"__pycache__", ".pytest_cache", ".git"}
        return {p.relative_to(repo).as_posix(): p.read_text() for p in sorted(repo.rglob("*"))
                if p.is_file() and not skip.intersection(p.relative_to(repo).parts)}

    @functools.cached_property
    def _patch_texts(self) -> list[str]:
        """The labelled patches, their ports to every placement and the reference fix (read once:
        every seeded draw needs their words)."""
        texts = [(self.root / "patches" / lab["file"]).read_text() for lab in self.labels]
        for p in self.data.placement:
            texts += [f.read_text() for f in sorted((self.root / "variants" / p.name).glob("*.patch"))]
        return [*texts, (self.root / "solution.patch").read_text()]

    def _taken_words(self, base: dict[str, str]) -> set[str]:
        """Every word of variant 0's repo and of its labelled states (no candidate may be one)."""
        words = set(_WORD.findall("\n".join(base.values())))
        for text in self._patch_texts:
            words.update(_WORD.findall(text))
        return words

    def _fstring_words(self, base: dict[str, str]) -> set[str]:
        """Words inside f-strings of variant 0's files and of the labelled patches' lines."""
        texts = [t for p, t in base.items() if p.endswith(".py")] + self._patch_texts
        words: set[str] = set()
        for text in texts:
            for m in _FSTRING.finditer(text):
                words.update(_WORD.findall(m.group(0)))
        return words

    def generate(self, index: int) -> Variant:
        """Variant ``index`` of this family (0: the folder as it is)."""
        if not 0 <= index < self.data.count:
            raise IndexError(index)
        base = self.repo()
        solution = (self.root / "solution.patch").read_text()
        transforms: list[Transform] = []
        if index == 0:
            patches = {lab["file"]: (self.root / "patches" / lab["file"]).read_text() for lab in self.labels}
            manifest = VariantManifest(family=self.name, index=0, split=self.data.split_of(0),
                                       repo_hash=repo_hash(base), patches_kept=list(patches),
                                       incident_report="variant 0's own report", base_root=str(self.root))
            return Variant(manifest=manifest, repo=base, base_repo=base, solution_patch=solution,
                           patches=patches, task_toml=self.task_toml)
        draw = self.draws.get(index) or self.draw(index)
        placed, choice = self._placed(base, draw.placement)
        solution_source = "solution.patch"
        if choice is not None:
            solution = (self.root / choice.solution).read_text()
            solution_source = choice.solution
            transforms.append(Transform(kind="placement", old="repo", new=choice.name,
                                        detail=choice.description))
        cfg_path, cfg_cls = _config_path(self.task_toml)
        sizes: list[tuple[str, str, str]] = []
        for field, drawn in sorted(draw.sizes.items()):
            value = _literal(drawn)
            old = _default_literal(placed.get(cfg_path, ""), cfg_cls, field)
            if old is not None and _value(old) != drawn:
                sizes.append((field, old, value))
                transforms.append(Transform(kind="size", old=field, new=value, detail=f"{old} -> {value}"))
        modules, names = draw.modules, draw.names
        transforms += [Transform(kind="rename_module", old=k, new=v) for k, v in sorted(modules.items())]
        transforms += [Transform(kind="rename", old=k, new=v) for k, v in sorted(names.items())]
        renamer = Renamer(names, modules, draw.prose)

        def transform(files: dict[str, str]) -> dict[str, str]:
            out = dict(files)
            if cfg_path in out:
                for field, old, new in sizes:
                    out[cfg_path] = set_default(out[cfg_path], cfg_cls, field, old, new)
            return renamer.files(out)

        repo = transform(placed)
        try:
            fixed = apply_patch(placed, solution)
        except WorkspaceError as exc:
            raise VariantError(f"{self.name}@{index}: the reference fix does not apply: {exc}") from exc
        new_solution = unified_diff(repo, transform(fixed))
        patches: dict[str, str] = {}
        dropped: list[DroppedPatch] = []
        clash = set(names.values()) | set(modules.values())  # a port must not use a variant's new name
        renamed = set(names) | set(modules)
        for lab in self.labels:
            # a port wins even where the original still applies: its effect may not survive the
            # placement (a running-sum trick where the placed code keeps lists)
            port, patched = self._port(placed, choice, lab["file"]) or (None, None)
            if port is None:
                try:
                    patched = apply_patch(placed, (self.root / "patches" / lab["file"]).read_text())
                except WorkspaceError as exc:
                    why = f"does not apply after the placement and has no port: {exc}"
                    dropped.append(DroppedPatch(file=lab["file"], reason=why))
                    continue
            if port is not None and (hit := _port_clash(port, clash, renamed)):
                dropped.append(DroppedPatch(file=lab["file"], reason=f"its port uses {hit!r}, which this "
                                            "variant's renames make ambiguous"))
                continue
            patches[lab["file"]] = unified_diff(repo, transform(patched))
        values = {**self.config_defaults(placed), **{f: _value(new) for f, _, new in sizes}}
        task_toml, how = self._task_toml(renamer, index, choice, values)
        manifest = VariantManifest(
            family=self.name, index=index, split=self.data.split_of(index), transforms=transforms,
            repo_hash=repo_hash(repo), patches_kept=list(patches), patches_dropped=dropped,
            solution=solution_source, base_root=str(self.root), incident_report=how,
            draw="kept" if index in self.draws else "seeded", prose=draw.prose)
        return Variant(manifest=manifest, repo=repo, base_repo=placed, solution_patch=new_solution,
                       patches=patches, task_toml=task_toml)

    def draw(self, index: int) -> Draw:
        """Variant ``index``'s choices from the seed: one stream per choice, so an edit of one
        table re-draws only that choice; a placement that pins ``index`` is taken, not drawn."""
        def stream(choice: str) -> random.Random:
            return random.Random(f"{self.name}:{index}:{choice}")

        pinned = next((p for p in self.data.placement if index in p.variants), None)
        choice = pinned or (stream("placement").choice([None, *self.data.placement]) if self.data.placement
                            else None)
        placement = choice.name if choice else ""
        placed, _ = self._placed(self.repo(), placement)
        sizes = {f: stream(f"size:{f}").choice(v) for f, v in sorted(self.data.sizes.items())}
        taken = self._taken_words(placed)
        used: set[str] = set()
        modules = self._pick(self.data.modules, stream, "module", taken, used)
        kept = self._fstring_words(placed)  # names inside f-strings are one STRING token: kept
        names = self._pick({k: v for k, v in self.data.names.items() if k not in kept}, stream, "name",
                           taken, used)
        return Draw(index=index, placement=placement, sizes=sizes, modules=modules, names=names)

    def _port(self, placed: dict[str, str], choice: Placement | None, file: str
              ) -> tuple[str, dict[str, str]] | None:
        """The labelled patch ``file`` rewritten for placement ``choice`` (``variants/<name>/<file>``:
        the same intent and label against variant 0's repo with the placement applied) and the
        placed repo with it applied; None when the placement has no port of it. A port is used
        whether or not the original applies to the placed repo."""
        path = self.root / "variants" / choice.name / file if choice is not None else None
        if path is None or not path.is_file():
            return None
        text = path.read_text()
        try:
            return text, apply_patch(placed, text)
        except WorkspaceError as exc:  # a port is data written for exactly this placed repo
            raise VariantError(f"{self.name}: a port of placement {path.parent.name} does not apply: "
                               f"{exc}") from exc

    def _placed(self, base: dict[str, str], placement: str) -> tuple[dict[str, str], Placement | None]:
        if not placement:
            return base, None
        choice = next((p for p in self.data.placement if p.name == placement), None)
        if choice is None:
            raise VariantError(f"{self.name}: a kept draw names placement {placement!r}, which "
                               f"{VARIANTS_FILE} no longer has")
        try:
            return apply_patch(base, (self.root / choice.patch).read_text()), choice
        except (OSError, WorkspaceError) as exc:
            raise VariantError(f"{self.name}: placement {choice.name}: {exc}") from exc

    @staticmethod
    def _pick(table: dict[str, list[str]], stream: Callable[[str], random.Random], kind: str,
              taken: set[str], used: set[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for old in sorted(table):
            free = [c for c in table[old] if c not in taken and c not in used]
            if old not in taken or not free:
                continue  # every candidate occurs already: this name is not renamed
            new = stream(f"{kind}:{old}").choice(free)
            used.add(new)
            out[old] = new
        return out

    def incident_log(self, index: int) -> str | None:
        """The hook for a variant's own incident log: ``variants/logs/<N>.log``, the tail of
        the variant's real unfixed run recorded in docker. None until it is recorded."""
        path = self.root / "variants" / "logs" / f"{index}.log"
        return path.read_text() if path.exists() else None

    def _task_toml(self, r: Renamer, index: int, choice: Placement | None,
                   values: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """task.toml with the placement's prose, the prose's numbers following ``values`` (the
        variant's config defaults) and the renames applied, and how its incident report was made."""
        data = _deep_copy(self.task_toml)
        phrases = {p: render_prose(t, values) for p, t in self.data.prose.items()}
        placement_prose = choice.prose if choice else {}
        signal_files = choice.signal_files if choice else []

        def numbers(text: str) -> str:
            for phrase, new in [*placement_prose.items(), *phrases.items()]:
                text = text.replace(phrase, new)
            return text

        map_prose(data, numbers)
        data["signal_files"] = [*data.get("signal_files", []),
                                *(p for p in signal_files if p not in data.get("signal_files", []))]
        words = {**r.modules, **r.names}
        for concept in data.get("concepts", []):  # a concept naming a renamed identifier: both names
            pats = concept["patterns"]
            concept["patterns"] = pats + [q for q in (_rename_words(p, words) for p in pats) if q not in pats]
        changed = sorted(p for p, new in phrases.items() if new != p)
        figures = ("; its figures follow this variant's config "
                   f"({', '.join(repr(phrases[p]) for p in changed)})" if changed else "")
        how = ("names renamed from variant 0's report; its log lines are variant 0's run, not yet "
               f"re-recorded from this variant's own run (variants/logs/{index}.log is the hook)" + figures)
        log = self.incident_log(index)
        if log is not None and "incident_report" in data:
            data["incident_report"] = replace_log_block(r.prose(data["incident_report"]), log)
            how = (f"names renamed; log lines from this variant's own run (variants/logs/{index}.log)"
                   + figures)
        for key in ("reference_explanation", "notes"):
            if key in data:
                data[key] = r.prose(data[key])
        data["hints"] = [r.prose(h) for h in data.get("hints", [])]
        if "failure" in data:
            data["failure"]["summary"] = r.prose(data["failure"].get("summary", ""))
        data["signal_files"] = [r.path(p) for p in data.get("signal_files", [])]
        entry = data.setdefault("entry", {})
        entry["modules"] = [r.modules.get(m, m) for m in entry.get("modules", ["train"])]
        entry["config"] = r.dotted(entry.get("config", "config:Config"))
        entry["train"] = r.dotted(entry.get("train", "train:train"))
        verify = data.get("verify")
        if verify:
            for table in ("knobs", "set"):
                if table in verify:
                    verify[table] = {r.names.get(k, k): v for k, v in verify[table].items()}
        if log is None and "incident_report" in data:
            data["incident_report"] = r.prose(data["incident_report"])
        return data, how


def _rename_words(pattern: str, words: dict[str, str]) -> str:
    """A concept regex with each renamed identifier (as a whole word) replaced."""
    for old, new in words.items():
        pattern = re.sub(r"(?<![A-Za-z_])" + re.escape(old) + r"(?![A-Za-z_])", new, pattern)
    return pattern


def replace_log_block(report: str, log: str, keep: int = 12) -> str:
    """``report`` with its first block of 4-space-indented lines (the quoted job log) replaced by
    the last ``keep`` lines of ``log``, indented the same way."""
    lines = report.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("    ") and line.strip()), None)
    if start is None:
        return report
    end = start
    while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    tail = [f"    {line}" for line in log.rstrip("\n").split("\n")[-keep:]]
    return "\n".join(lines[:start] + tail + lines[end:])


def _port_clash(port: str, new: set[str], renamed: set[str]) -> str | None:
    """A word of ``port`` that a kept draw makes ambiguous: one of the variant's new names (the
    inverse map would not be exact) or a renamed name inside an f-string (never renamed there)."""
    if hit := sorted(new & set(_WORD.findall(port))):
        return hit[0]
    inside = {w for m in _FSTRING.finditer(port) for w in _WORD.findall(m.group(0))}
    return next(iter(sorted(inside & renamed)), None)


def _default_literal(text: str, cls: str, field: str) -> str | None:
    v = _default_node(text, cls, field)
    return None if v is None else ast.get_source_segment(text, v)


def _value(literal: str) -> Any:
    try:
        return ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal


def _deep_copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _deep_copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_deep_copy(v) for v in data]
    return data


# --------------------------------------------------------------------------- the inverse
def renamer_of(manifest: VariantManifest) -> Renamer:
    """The variant's renames (one shared, memoising Renamer per set of renames)."""
    return _renamer(tuple(sorted(manifest.renames.items())), tuple(sorted(manifest.module_renames.items())),
                    False, manifest.prose)


@functools.lru_cache(maxsize=256)
def _renamer(names: tuple[tuple[str, str], ...], modules: tuple[tuple[str, str], ...],
             inverse: bool, prose: int) -> Renamer:
    r = Renamer(dict(names), dict(modules), prose)
    return r.inverse() if inverse else r


def _inverse_of(manifest: VariantManifest) -> Renamer:
    return _renamer(tuple(sorted(manifest.renames.items())), tuple(sorted(manifest.module_renames.items())),
                    True, manifest.prose)


def to_base(files: dict[str, str], manifest: VariantManifest,
            config_ref: str = "config:Config") -> dict[str, str] | None:
    """A variant workspace in variant 0's names and sizes (placement kept), or None when a
    variant-0 name already occurs in it (the inverse could not undo the renames)."""
    inverse = _inverse_of(manifest)
    if inverse.collision(files) is not None:
        return None
    out = inverse.files(files)
    cfg_mod, _, cfg_cls = config_ref.partition(":")
    path = f"{cfg_mod}.py"
    if path in out:
        for field, (old, new) in manifest.sizes.items():
            out[path] = set_default(out[path], cfg_cls, field, new, old)
    return out


def collision(files: dict[str, str], manifest: VariantManifest) -> str | None:
    """Why ``files`` cannot be mapped back to variant 0 (None: it can)."""
    return _inverse_of(manifest).collision(files)
