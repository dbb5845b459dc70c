"""``key=value`` parameters of a graph spec: ``gen:NAME?k=v&...`` and ``PATH?k=v&...``.

One parser for both: the keys a callable accepts are its keyword parameters, and each value
is converted to the parameter's annotated type (``int``, ``float``, ``str``, ``bool``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from urllib.parse import parse_qsl

from engine.errors import SpecError, quote

__all__ = ["keyword_only_parameters", "spec_kwargs"]

_KINDS = {"int": int, "float": float, "str": str, "bool": bool}


def keyword_only_parameters(fn: Callable) -> dict[str, inspect.Parameter]:
    """The keyword-only parameters of ``fn``: the options a file format's loader takes
    (``load(path, *, option=default, ...)``)."""
    return {k: p for k, p in inspect.signature(fn).parameters.items() if p.kind is p.KEYWORD_ONLY}


def _convert(value: str, annotation: object, key: str, where: str):
    kind = annotation if isinstance(annotation, type) else _KINDS.get(str(annotation), str)
    try:
        if kind is bool:
            if value.lower() in ("1", "true", "yes"):
                return True
            if value.lower() in ("0", "false", "no"):
                return False
            raise ValueError
        return kind(value)
    except ValueError:
        raise SpecError(f"{where}: parameter {quote(key)} must be {getattr(kind, '__name__', kind)}, "
                        f"got {quote(value)}") from None


def spec_kwargs(query: str, params: dict[str, inspect.Parameter], where: str) -> dict:
    """Keyword arguments from the ``k=v&...`` part of a spec, converted to ``params``' types.

    ``where`` starts every error message (``gen:nmt``, the file name). An unknown key names
    the parameters there are.
    """
    kwargs = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key not in params:
            known = ", ".join(params) or "none"
            raise SpecError(f"{where} has no parameter {quote(key)} (parameters: {known})")
        kwargs[key] = _convert(value, params[key].annotation, key, where)
    return kwargs
