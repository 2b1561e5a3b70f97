"""The action vocabulary in one table: the action models and everything each face derives from it.

``ACTIONS`` lists the action models; each model's docstring, fields (with their
descriptions and limits) and ``example`` are the only place an action is described. The
discriminated union and its validator, the agent-facing formats (instructions and the
baseline agent's prompt), the MCP tools and their JSON schemas, the TRL tool docstrings and
the HTTP wire schema are all derived here or from these models, so adding a field to an
action is one edit in its model.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import InvalidAction

MAX_TEXT = 200_000  # characters accepted in one edit / explanation
MAX_COMMAND = 10_000
MAX_PATH = 512


def _require_action_type(schema: dict[str, Any], _: type) -> None:
    """action_type has a default (handy in code) but the wire format requires it."""
    required = schema.setdefault("required", [])
    if "action_type" not in required:
        required.insert(0, "action_type")


class ActionModel(BaseModel):
    """Base of every action: ``action_type`` names it, ``metadata`` is free-form and ignored."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_require_action_type)
    example: ClassVar[dict[str, Any]] = {}
    result: ClassVar[str] = "The outcome, followed by a status line."  # what a tool call returns
    waits: ClassVar[bool] = False  # waits on I/O (a sandbox run, verification, a judge)
    metadata: dict[str, Any] = Field(default_factory=dict, description="free-form, ignored")

    @classmethod
    def kind(cls) -> str:
        return cls.model_fields["action_type"].default  # type: ignore[no-any-return]

    @classmethod
    def argument_names(cls) -> tuple[str, ...]:
        """The action's own fields: what a tool call passes as arguments."""
        return tuple(n for n in cls.model_fields if n not in ("action_type", "metadata"))

    @classmethod
    def required_arguments(cls) -> tuple[str, ...]:
        return tuple(n for n in cls.argument_names() if cls.model_fields[n].is_required())

    @classmethod
    def summary(cls) -> str:
        return " ".join((cls.__doc__ or "").split())

    @classmethod
    def as_tool_method(cls, fn: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
        """``fn(self, *args, **kwargs)`` dressed as this action's tool method: a signature of
        ``self`` and each argument (typed, with the model's defaults), annotations, name and
        docstring, which tool-calling frameworks read (TRL's get_json_schema, verifiers)."""
        params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        for n in cls.argument_names():
            field = cls.model_fields[n]
            default = inspect.Parameter.empty if field.is_required() else field.default
            params.append(inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            annotation=field.annotation, default=default))
        fn.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
        fn.__annotations__ = {p.name: p.annotation for p in params[1:]} | {"return": str}
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = doc
        return fn

    @classmethod
    def bind_arguments(cls, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The action's arguments of a call of a method made by ``as_tool_method``."""
        bound = fn.__signature__.bind(*args, **kwargs)  # type: ignore[attr-defined]
        bound.apply_defaults()
        return {n: bound.arguments[n] for n in cls.argument_names()}


class ReadFile(ActionModel):
    """Read one file of the workspace."""

    action_type: Literal["read_file"] = "read_file"
    filename: str = Field(min_length=1, max_length=MAX_PATH,
                          description="path relative to the workspace root, e.g. train.py")
    example: ClassVar[dict[str, Any]] = {"action_type": "read_file", "filename": "train.py"}
    result: ClassVar[str] = "The file's content, followed by a status line."


class EditFile(ActionModel):
    """Replace exactly one occurrence of old_str by new_str (old_str empty: create a new file)."""

    action_type: Literal["edit_file"] = "edit_file"
    filename: str = Field(min_length=1, max_length=MAX_PATH,
                          description="path relative to the workspace root")
    old_str: str = Field(max_length=MAX_TEXT, description=(
        "exact text to replace; it must occur exactly once in the file (empty only to create a new file)"))
    new_str: str = Field(max_length=MAX_TEXT, description="the replacement text")
    example: ClassVar[dict[str, Any]] = {"action_type": "edit_file", "filename": "train.py",
                                         "old_str": "<exact unique text>", "new_str": "<replacement>"}
    result: ClassVar[str] = ("Whether the edit was applied (or why not, with the nearest lines), "
                             "and a status line.")


class ExecuteBash(ActionModel):
    """Run a shell command in the workspace (in a throwaway sandbox, not on the server)."""

    action_type: Literal["execute_bash"] = "execute_bash"
    command: str = Field(min_length=1, max_length=MAX_COMMAND,
                         description="the shell command, e.g. python train.py")
    example: ClassVar[dict[str, Any]] = {"action_type": "execute_bash", "command": "python train.py"}
    result: ClassVar[str] = "The command's output, its exit code and outcome, and a status line."
    waits: ClassVar[bool] = True


class ViewGitDiff(ActionModel):
    """Unified diff of the workspace against the original repo (one file or all)."""

    action_type: Literal["view_git_diff"] = "view_git_diff"
    filename: str | None = Field(default=None, max_length=MAX_PATH,
                                 description="one file's diff, or every change when omitted")
    example: ClassVar[dict[str, Any]] = {"action_type": "view_git_diff", "filename": None}
    result: ClassVar[str] = 'The diff ("No changes." when there is none), and a status line.'


class SubmitFix(ActionModel):
    """End the episode: the fix is verified by hidden checks and the explanation judged."""

    action_type: Literal["submit_fix"] = "submit_fix"
    explanation: str = Field(max_length=MAX_TEXT,
                             description="root cause, mechanism, and why the fix works")
    example: ClassVar[dict[str, Any]] = {"action_type": "submit_fix",
                                         "explanation": "<root cause, mechanism, why the fix works>"}
    result: ClassVar[str] = ("The verification verdict with its reasons, the explanation score and "
                             "the episode score.")
    waits: ClassVar[bool] = True


ACTIONS: tuple[type[ActionModel], ...] = (ReadFile, EditFile, ExecuteBash, ViewGitDiff, SubmitFix)
ACTION_TYPES: tuple[str, ...] = tuple(m.kind() for m in ACTIONS)
ACTION_MODELS: dict[str, type[ActionModel]] = {m.kind(): m for m in ACTIONS}
Action = Annotated[Union[ACTIONS], Field(discriminator="action_type")]  # type: ignore[valid-type]  # noqa: UP007
ACTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(Action)


def validation_message(exc: ValidationError | list[Any], prefix: str = "invalid request",
                       limit: int = 8) -> str:
    """One line per pydantic error (location: message), the way every face reports them."""
    errs = exc.errors() if isinstance(exc, ValidationError) else exc
    msgs = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in errs]
    return f"{prefix}: " + "; ".join(msgs[:limit])


def parse_action(data: Any) -> ActionModel:
    """Validate a raw action (a dict) into its model, or raise InvalidAction saying what is accepted."""
    if isinstance(data, ActionModel):
        return data
    if isinstance(data, dict) and "action_type" not in data:
        raise InvalidAction(f"the action has no action_type; expected one of: {', '.join(ACTION_TYPES)}")
    try:
        return ACTION_ADAPTER.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise InvalidAction(validation_message(exc, "invalid action", 6)) from None


def example_line(kind: str) -> str:
    """One action's example as the single JSON line agents are shown."""
    return json.dumps(ACTION_MODELS[kind].example)


def examples_text(indent: str = "") -> str:
    """Every action's example, one JSON line each (instructions, the agent's prompt)."""
    return "\n".join(indent + example_line(k) for k in ACTION_TYPES)


def tool_input_schema(model: type[ActionModel]) -> dict[str, Any]:
    """JSON schema of an action's arguments (a tool's input), without action_type and metadata."""
    schema = model.model_json_schema()
    props = {k: v for k, v in schema["properties"].items() if k in model.argument_names()}
    return {"type": "object", "properties": props,
            "required": [k for k in schema.get("required", []) if k in props],
            "additionalProperties": False}


def tool_docstring(model: type[ActionModel], returns: str | None = None) -> str:
    """A Google-style docstring for a tool method (what transformers' get_json_schema reads)."""
    returns = returns or model.result
    lines = [model.summary(), ""]
    if model.argument_names():
        lines.append("Args:")
        for name in model.argument_names():
            field = model.model_fields[name]
            lines.append(f"    {name}: {field.description or name}")
        lines.append("")
    lines += ["Returns:", f"    {returns}"]
    return "\n".join(lines)
