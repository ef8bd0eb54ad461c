"""Difficulty parameters: each field of a task's config dataclass says what it means and which
values it takes, so a recipe can set it, ``validate()`` can check it and ``vrforge tasks`` can
explain it.

A config field is declared with ``param``::

    @dataclass(frozen=True)
    class MazeConfig:
        size: int = param(doc="cells per side of each layer", low=5, high=40)

``check_params`` enforces every field's type and bounds (a task's ``validate()`` calls it,
then checks combinations); ``level_config`` makes a level's config from a preset and a
recipe's overrides, in one readable line per mistake.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["RESERVED_LEVEL_KEYS", "ParamError", "check_params", "describe", "level_config", "param"]

# Keys of a recipe's level table that are not task parameters.
RESERVED_LEVEL_KEYS = ("preset", "resolutions")
_MISSING = dataclasses.MISSING


class ParamError(ValueError):
    """A parameter value a task cannot take; the message is one line."""


def param(default: Any = _MISSING, *, doc: str, low: float | None = None, high: float | None = None,
          choices: Sequence[Any] | None = None) -> Any:
    """A config field with its meaning (``doc``) and its allowed values: ``low``..``high``
    inclusive for numbers, or one of ``choices``."""
    metadata = {"doc": doc, "low": low, "high": high, "choices": tuple(choices) if choices is not None else None}
    if default is _MISSING:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _kind(field: dataclasses.Field) -> type:
    # Config modules use ``from __future__ import annotations``: the annotation is a string.
    name = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    return {"int": int, "float": float, "bool": bool, "str": str}.get(name, object)


_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _type_ok(kind: type, value: Any) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is object:
        return True
    return isinstance(value, kind)


def _bounds(meta: Mapping[str, Any]) -> str:
    if meta.get("choices") is not None:
        return "one of " + ", ".join(map(str, meta["choices"]))
    low, high = meta.get("low"), meta.get("high")
    if low is not None and high is not None:
        return f"{low}..{high}"
    if low is not None:
        return f">= {low}"
    if high is not None:
        return f"<= {high}"
    return "any"


def check_params(config: Any) -> None:
    """ParamError when a field of ``config`` has the wrong type or lies outside its declared bounds."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        kind = _kind(field)
        if not _type_ok(kind, value):
            raise ParamError(f"{field.name} must be {_TYPE_WORDS[kind]}, got {value!r}")
        meta = field.metadata
        if meta.get("choices") is not None and value not in meta["choices"]:
            raise ParamError(f"{field.name} must be {_bounds(meta)}, got {value!r}")
        low, high = meta.get("low"), meta.get("high")
        if (low is not None and value < low) or (high is not None and value > high):
            raise ParamError(f"{field.name} must be in {_bounds(meta)}, got {value!r}")


def describe(config_type: Any) -> list[dict[str, Any]]:
    """Each parameter of a config class: name, type, meaning and bounds (for ``vrforge tasks`` and the docs)."""
    return [{"name": f.name, "type": _kind(f).__name__ if _kind(f) is not object else str(f.type),
             "doc": f.metadata.get("doc", ""), "bounds": _bounds(f.metadata),
             **({"default": f.default} if f.default is not _MISSING else {})}
            for f in dataclasses.fields(config_type)]


def level_config(presets: Mapping[str, Any], preset: str, overrides: Mapping[str, Any]) -> Any:
    """The config of a level that starts from ``presets[preset]`` and sets ``overrides``;
    ParamError (one line) for an unknown preset or parameter, a bad value or an impossible combination."""
    if preset not in presets:
        raise ParamError(f"unknown preset {preset!r} (choose from {', '.join(presets)})")
    base = presets[preset]
    names = [f.name for f in dataclasses.fields(base)]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ParamError(f"unknown parameter(s) {', '.join(unknown)} (this task takes {', '.join(names)})")
    kinds = {f.name: _kind(f) for f in dataclasses.fields(base)}
    # TOML writes 1 for 1.0: a float parameter keeps one spelling, so the config hash does too.
    values = {k: float(v) if kinds[k] is float and _type_ok(float, v) else v for k, v in overrides.items()}
    config = dataclasses.replace(base, **values)
    try:
        check_params(config)
        config.validate()
    except ParamError:
        raise
    except (ValueError, TypeError) as exc:
        raise ParamError(str(exc)) from None
    return config
