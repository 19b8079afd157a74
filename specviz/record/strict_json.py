"""Strict reconstruction of dataclasses from JSON, for trace files: each field is checked against its declared
type, resolved to real types by typing.get_type_hints (so this does not depend on how the annotations are
written): a dataclass, a list of ids, numbers or dataclasses, a dict, a scalar, or any of these or None. Anything
else raises ValueError with a readable message that names the field ("malformed trace: rounds[2].k ...").
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import MISSING, fields, is_dataclass
from typing import Any

_SCALARS = {int: (int,), float: (int, float), str: (str,), bool: (bool,)}


def build(cls, data: Any, where: str):
    """An instance of the dataclass cls from its JSON object, every field checked (where: its name in messages)."""
    if not isinstance(data, dict):
        raise ValueError(f"malformed trace: {where} should be an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):
        if f.name not in data:
            if f.default is not MISSING or f.default_factory is not MISSING:
                continue  # optional field, absent from the file
            raise ValueError(f"malformed trace: {where} lacks \"{f.name}\"")
        kwargs[f.name] = _value(hints[f.name], data[f.name], f"{where}.{f.name}")
    return cls(**kwargs)


def _value(kind, value, where: str):
    """value checked against the type `kind` (and rebuilt where kind is a dataclass)."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType):  # X | None
        if value is None and type(None) in args:
            return None
        kind = next(a for a in args if a is not type(None))
    if value is None:
        raise ValueError(f"malformed trace: {where} must not be null")
    if is_dataclass(kind):
        return build(kind, value, where)
    origin = typing.get_origin(kind)
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"malformed trace: {where} should be a list")
        item = typing.get_args(kind)[0]
        if is_dataclass(item) or typing.get_origin(item) in (typing.Union, types.UnionType):  # X or X | None
            return [_value(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        if item is int and not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ValueError(f"malformed trace: {where} should be a list of whole numbers")
        if item is float and not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                     for v in value):
            raise ValueError(f"malformed trace: {where} should be a list of finite numbers")
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"malformed trace: {where} should be an object")
        return value
    return _check_scalar(kind, value, where)


def _check_scalar(kind: type, value, where: str):
    allowed = _SCALARS[kind]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, allowed):
        raise ValueError(f"malformed trace: {where} should be {kind.__name__}, got {type(value).__name__}")
    if kind is float and not math.isfinite(value):
        raise ValueError(f"malformed trace: {where} is not a finite number")
    return float(value) if kind is float else value
