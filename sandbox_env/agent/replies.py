"""Reading a model reply: the first valid action in it, repairing common near-misses, or a precise error."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..actions import ACTION_MODELS, ACTION_TYPES, ActionModel, example_line, examples_text, parse_action
from ..errors import InvalidAction

AnyAction = ActionModel

ACTION_FORMATS = examples_text()  # one JSON line per action, derived from the action table


class ReplyError(ValueError):
    """A model reply that holds no usable action; the message says precisely why."""


@dataclass(frozen=True)
class ParsedReply:
    """The action of a reply (the first valid one) and how many further valid ones it held."""

    action: AnyAction
    ignored: int = 0  # further valid actions in the same reply (not executed)


_DECODER = json.JSONDecoder(strict=False)  # literal newlines inside strings are common in replies


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order (prose, fences and trailing text skipped)."""
    found: list[dict[str, Any]] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        i = text.find("{", end)
    return found


_ARG_KEYS = ("arguments", "args", "parameters", "params", "input")


def _normalise(obj: dict[str, Any]) -> dict[str, Any]:
    """Common near-misses -> the flat action: {"action": {...}} (OpenEnv's wrapping),
    {"action": "read_file", ...}, fields nested under "arguments"/"args"/..., "Read_File "."""
    inner = obj.get("action")
    if "action_type" not in obj and isinstance(inner, dict):
        obj = inner
    elif "action_type" not in obj and isinstance(inner, str):
        obj = {k: v for k, v in obj.items() if k != "action"} | {"action_type": inner}
    kind = obj.get("action_type")
    if isinstance(kind, str):
        obj = {**obj, "action_type": kind.strip().lower()}
    for key in _ARG_KEYS:
        nested = obj.get(key)
        if isinstance(nested, dict) and "action_type" in obj:
            obj = {**nested, **{k: v for k, v in obj.items() if k != key}}
    return obj


def _validate(candidate: dict[str, Any]) -> AnyAction:
    kind = candidate.get("action_type")
    if kind not in ACTION_TYPES:
        raise ReplyError(f"unknown action_type {kind!r}; expected one of: {', '.join(ACTION_TYPES)}")
    model = ACTION_MODELS[kind]
    fields = {*model.argument_names(), "action_type", "metadata"}
    data = {k: v for k, v in candidate.items() if k in fields}  # extra keys ("thought", ...) dropped
    missing = [f for f in model.required_arguments() if f not in data]
    if missing:
        raise ReplyError(f"{kind} is missing {', '.join(missing)}; expected "
                         f"{_format_of(kind)}")
    try:
        return parse_action(data)
    except InvalidAction as exc:
        raise ReplyError(f"{exc}; expected {_format_of(kind)}") from None


def _format_of(kind: str) -> str:
    return example_line(kind)


def _no_object_error(text: str) -> ReplyError:
    """Why a reply with no JSON object in it is unusable."""
    if "{" not in text:
        return ReplyError("no JSON object found in the reply")
    try:
        _DECODER.raw_decode(text, text.index("{"))
    except ValueError as exc:
        return ReplyError(f"the reply holds no valid JSON object (the first '{{' does not parse: "
                          f"{exc}; check quotes, escapes and closing braces)")
    return ReplyError("the reply holds no JSON object")


def parse_reply(text: str | None) -> ParsedReply:
    """The first valid action in a model reply, or ReplyError saying precisely what is wrong.

    Accepts a bare JSON object, JSON in ```json / ``` fences, JSON with prose before or after
    it, OpenEnv's {"action": {...}} wrapping and the near-misses `_normalise` repairs. Keys an
    action does not have ("thought", ...) are dropped.
    """
    if text is None or not text.strip():
        raise ReplyError("the reply was empty")
    objects = [_normalise(o) for o in _json_objects(text)]
    if not objects:
        raise _no_object_error(text)
    first_error: ReplyError | None = None
    valid: list[AnyAction] = []
    for obj in objects:
        if "action_type" not in obj:
            continue
        try:
            valid.append(_validate(obj))
        except ReplyError as exc:
            first_error = first_error or exc
    if valid:
        return ParsedReply(valid[0], ignored=len(valid) - 1)
    if first_error is not None:
        raise first_error
    keys = ", ".join(sorted(objects[0])[:6]) or "none"
    raise ReplyError(f"the JSON object has no action_type (keys: {keys}); "
                     f"action_type must be one of: {', '.join(ACTION_TYPES)}")
