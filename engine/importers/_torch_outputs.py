"""Which tensor of a PyTorch module's output a traced step reads, and the loss it takes of it.

A module may return a tensor, a list or tuple (``return_dict=False``), a dict, a dataclass, or a Hugging
Face ``ModelOutput`` (a dict and a dataclass at once). :func:`select_output` picks one tensor of it:

* ``output_key`` given: that key of a dict (a field of a dataclass), or that position of a list or tuple
  (``"0"``, ``"1"``, ...);
* else the ``loss`` entry when the module computed one (a Hugging Face model given ``labels``);
* else the first tensor, in the output's own order (``logits`` for a ``...ForCausalLM`` or
  ``...ForImageClassification`` model, ``last_hidden_state`` for a base model).

:func:`training_loss` makes the scalar a training step differentiates: the module's own loss as it is, any
other tensor reduced to the mean of its squares (mean-squared error against a zero target: the backward pass
has the structure of a real loss's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import GraphError, quote

__all__ = ["select_output", "training_loss"]

_MAX_KEYS_SHOWN = 6


def _is_tensor(val: Any) -> bool:
    import torch

    return isinstance(val, torch.Tensor)


def _first_tensor(val: Any) -> Any:
    if _is_tensor(val):
        return val
    items = val.values() if isinstance(val, Mapping) else val if isinstance(val, (list, tuple)) else ()
    for v in items:
        t = _first_tensor(v)
        if t is not None:
            return t
    return None


def _entries(out: Any) -> dict[str, Any] | None:
    """A dict or dataclass output as ``{key: value}`` (None for anything else); ``None`` values left out, as
    ``ModelOutput`` leaves them out of its keys."""
    if isinstance(out, Mapping):
        return {str(k): v for k, v in out.items() if v is not None}
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return {f.name: getattr(out, f.name) for f in dataclasses.fields(out) if getattr(out, f.name) is not None}
    return None


def _tensor_keys(entries: dict[str, Any]) -> str:
    keys = [k for k, v in entries.items() if _is_tensor(v)]
    shown = ", ".join(keys[:_MAX_KEYS_SHOWN]) + (", ..." if len(keys) > _MAX_KEYS_SHOWN else "")
    return shown or "none"


def select_output(out: Any, output_key: str | None = None, *, model: str = "the module") -> tuple[str | None, Any]:
    """``(key, tensor)``: the tensor of ``out`` a step reads (module docstring) and its key (None for a plain
    tensor or a list position).

    Raises
    ------
    GraphError
        If ``output_key`` names no tensor of ``out``, or ``out`` holds no tensor.
    """
    entries = _entries(out)
    if output_key is not None:
        if entries is not None:
            if not _is_tensor(entries.get(output_key)):
                raise GraphError(f"{model} returns no tensor {quote(output_key)}: its tensor outputs are "
                                 f"{_tensor_keys(entries)}")
            return output_key, entries[output_key]
        if isinstance(out, (list, tuple)):
            if not output_key.isdigit() or int(output_key) >= len(out) or not _is_tensor(out[int(output_key)]):
                raise GraphError(f"{model} returns a {type(out).__name__} of {len(out)}: --output-key "
                                 f"{quote(output_key)} must be the position of a tensor in it (0, 1, ...)")
            return None, out[int(output_key)]
        raise GraphError(f"{model} returns a {type(out).__name__}, not a dict, dataclass, list or tuple: "
                         "leave out --output-key")
    if entries is not None and _is_tensor(entries.get("loss")):
        return "loss", entries["loss"]
    first = _first_tensor(entries if entries is not None else out)
    if first is None:
        raise GraphError(f"{model} returns a {type(out).__name__} that holds no tensor")
    return None, first


def training_loss(output_key: str | None = None, *, model: str = "the module") -> Callable[[Any], Any]:
    """``loss(output) -> scalar tensor``: the module's own ``loss`` as it is (summed if it is not a scalar), any
    other selected tensor's mean square."""

    def loss(out: Any) -> Any:
        key, t = select_output(out, output_key, model=model)
        if key == "loss":
            return t if t.dim() == 0 else t.sum()
        return t.float().pow(2).mean()

    return loss
