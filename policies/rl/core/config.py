"""What every learned placer's config is made of, and the card that registers a placer.

A placer's config is a dataclass deriving from :class:`LearnedConfig`, every field declared with
:func:`param`: its default, its meaning, the *source* of the default (a paper section, the authors'
code as ``file.py:N``, or ``"ours: …"`` with the measurement behind it) and its range or choices.
``--param`` validation, the CLI's help and the app's Train form are built from these. Torch-free:
the CLI and the app import every config.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from engine.errors import quote
from engine.limits import MAX_COUNT
from policies.rl.core.task import GROUPINGS, check_grouping

__all__ = ["LearnedConfig", "LearnedPlacerInfo", "param"]


def param(default: Any, doc: str, source: str, *, low: float | None = None, high: float | None = None,
          choices: Sequence[str] | None = None) -> Any:
    """A config field: ``default``, what it is (``doc``), where the default comes from (``source``),
    and the allowed values (inclusive ``low``/``high`` bounds for numbers, ``choices`` for strings)."""
    meta = {"doc": doc, "source": source, "low": low, "high": high, "choices": tuple(choices) if choices else None}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass
class LearnedConfig:
    """The hyper-parameters every learned placer has; a placer's config derives from it and may
    redeclare a field to change its default (and cite that default's source)."""

    groups: int | None = param(128, "op groups to place (Merge-and-Colocate target N; None: every op its own group)",
                               "Placeto §4: 128 for ptb and cifar10, 160 for nmt (family: specs get their own)",
                               low=1)
    grouping: str = param("merge", "merge: §3.3 rule (stopped at `groups`) + Merge-and-Colocate to `groups` "
                          "(groups=None on a graph of over 1,000 ops: 256); units: Mirhoseini §4.1 layer units "
                          "(`groups` unused); ops: every op its own group, whatever the size",
                          "Placeto §4", choices=GROUPINGS)
    unit_depth: int | None = param(None, "scope parts naming a layer for grouping=units (None: found from the "
                                   "scopes)", "ours: engine.grouping.rules.unit_groups", low=1)
    memory_penalty: float = param(2.0, "c, seconds per GB of peak memory over the tightest device's memory",
                                  "Placeto App. A.7", low=0.0)
    lr: float = param(1e-3, "Adam learning rate, decayed linearly to lr_final", "Placeto App. A.7", low=1e-12)
    lr_final: float = param(1e-4, "learning rate at the end of the budget", "Placeto App. A.7", low=0.0)
    entropy: float = param(1e-2, "entropy weight β, decayed linearly to entropy_final", "Placeto App. A.7", low=0.0)
    entropy_final: float = param(1e-4, "entropy weight at the end of the budget", "Placeto App. A.7", low=0.0)
    clip_grad: float = param(1.0, "gradient-norm clip (0: no clipping)", "ours: no paper gives one; a large first "
                             "gradient otherwise throws the near-uniform initial policy to one device", low=0.0)

    #: Values that a config stored before a field existed stands for (a new default must not change
    #: what an older run's weights mean); :func:`stored_params` fills them in.
    STORED_DEFAULTS: ClassVar[dict[str, Any]] = {}

    def __post_init__(self) -> None:
        """Every field's type, range and choices (ValueError naming the field), then the grouping."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, _checked(f, getattr(self, f.name)))
        check_grouping(self.grouping, self.unit_depth)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def reward_kind(self, asked: str | None) -> str:
        """The makespans a training with this config is rewarded with: ``asked`` (``simulated`` when
        None); a placer whose config fixes them (DOPPLER's stages) overrides this and refuses others."""
        return asked or "simulated"


@dataclass(frozen=True)
class LearnedPlacerInfo:
    """A learned placer's card: what :mod:`policies.rl.registry` lists (its package's ``PLACER``)."""

    name: str
    description: str
    config: type[LearnedConfig]
    agent: Callable[..., Any]
    episodes: int  # training budget when used as a plain placer (no policy)


def _checked(f: dataclasses.Field, value: Any) -> Any:
    """``value`` for field ``f`` with the type its annotation implies, within its range or choices."""
    annotation, meta = str(f.type), f.metadata
    if value is None and "None" in annotation:
        return None
    want = next(t for t in ("list", "bool", "int", "float", "str") if annotation.startswith(t))
    ok = {"bool": isinstance(value, bool), "str": isinstance(value, str), "list": isinstance(value, list),
          "int": isinstance(value, int) and not isinstance(value, bool),
          "float": isinstance(value, int | float) and not isinstance(value, bool)}[want]
    if not ok:
        raise ValueError(f"parameter {quote(f.name)} must be {want}, got {quote(value)}")
    if want == "str" and meta.get("choices") and value not in meta["choices"]:
        raise ValueError(f"parameter {quote(f.name)} must be one of {', '.join(meta['choices'])}, got {quote(value)}")
    if want in ("int", "float"):
        lo, hi = meta.get("low"), meta.get("high")
        if not math.isfinite(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = ("finite" if lo is None else "> 0" if lo == 1e-12 else f">= {lo}") if hi is None else \
                f"in [{lo}, {hi}]"
            raise ValueError(f"parameter {quote(f.name)} must be {bounds}, got {quote(value)}")
        if want == "int" and hi is None and value > MAX_COUNT:  # every integer is a count or a size (engine/limits.py)
            raise ValueError(f"parameter {quote(f.name)} must be <= {MAX_COUNT:,} (placelab's limit MAX_COUNT), "
                             f"got {value:,}")
        return float(value) if want == "float" else value
    return value
