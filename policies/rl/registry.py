"""The registry of learned placers: a learned placer is **one module** ``policies/rl/<paper>.py``.

Everything else reads this registry: ``placelab train / eval / experiment`` and ``--param``
validation (:func:`make_config`), ``placelab place --placer NAME`` and the app's Place page
(:mod:`policies.learned` registers every learned placer as a placer), the Train page's
parameter form (:func:`config_fields`), and stored runs (``policy.json`` holds the config's
``to_dict()``; :func:`make_agent` rebuilds the agent from it).

What a new learned placer's module must provide
-----------------------------------------------
1. A module docstring with the paper's formulas and its numbered deviations from the paper.
2. A config dataclass deriving from :class:`LearnedConfig` (which holds the fields every learned
   placer shares: grouping, memory penalty, learning rate and entropy schedules, gradient clip)
   whose every field is declared with :func:`param`: default, meaning, and the *source* of the
   default — a paper section, or ``"ours: …"`` with the measurement that justified it — and its
   range or choices (``--param`` validation and the Train page's widgets come from these).
   ``__post_init__`` may raise ``ValueError`` for combinations the ranges cannot express.
3. An agent class implementing :class:`policies.rl.agent.Agent` (rollout without autograd, then a
   gradient step; see that module), constructed as ``Agent(num_devices, config, *, seed=0,
   tasks=())``; what it fixes from the training tasks (e.g. a vocabulary) it writes back into
   ``agent.config`` so that the stored config rebuilds the same network.
4. The agent class decorated with ``@register_learned(NAME, config=Config, description=...,
   episodes=N)`` (``episodes``: the training budget when it is used as a plain placer).
5. **No torch at import time**: import torch (and a network module ``<paper>_net.py``) inside
   functions. The registry imports every module of ``policies/rl`` whose source calls
   ``register_learned(`` whenever ``policies`` is imported (``placelab placers``, the app), and
   those must stay free of torch's multi-second import.

Then add ``tests/policies/rl/test_<paper>.py``; ``tests/policies/rl/test_registry.py`` checks every
registered config (sources cited, defaults within their ranges, a round trip through ``to_dict``).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from engine.errors import SpecError
from engine.limits import MAX_COUNT
from policies.rl.task import GROUPINGS, PlacementTask, check_grouping

__all__ = ["LearnedConfig", "LearnedPlacerInfo", "config_fields", "learned_placers", "make_agent", "make_config",
           "param", "register_learned", "stored_params"]


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
    grouping: str = param("merge", "merge: §3.3 rule + Merge-and-Colocate to `groups`; units: Mirhoseini §4.1 "
                          "layer units (`groups` unused)", "Placeto §4", choices=GROUPINGS)
    unit_depth: int | None = param(None, "scope parts naming a layer for grouping=units (None: found from the "
                                   "scopes)", "ours: engine.groupers.unit_groups", low=1)
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


@dataclass(frozen=True)
class LearnedPlacerInfo:
    """A registered learned placer."""

    name: str
    description: str
    config: type[LearnedConfig]
    agent: Callable[..., Any]
    episodes: int  # training budget when used as a plain placer (no policy)


_REGISTRY: dict[str, LearnedPlacerInfo] = {}
_discovered = False


def register_learned(name: str, *, config: type[LearnedConfig], description: str,
                     episodes: int) -> Callable[[type], type]:
    """Class decorator on a learned placer's agent (see the module docstring)."""

    def deco(agent: type) -> type:
        _REGISTRY[name] = LearnedPlacerInfo(name, description, config, agent, episodes)
        return agent

    return deco


def learned_placers() -> dict[str, LearnedPlacerInfo]:
    """Every learned placer, by name (imports the modules of ``policies/rl`` that register one)."""
    global _discovered
    if not _discovered:
        _discovered = True
        import policies.rl as package

        for info in pkgutil.iter_modules(package.__path__):
            source = Path(package.__path__[0]) / f"{info.name}.py"
            if info.name != "registry" and source.is_file() and "register_learned(" in source.read_text("utf-8"):
                importlib.import_module(f"policies.rl.{info.name}")
    return dict(sorted(_REGISTRY.items()))  # by name, whichever module happened to be imported first


def _info(name: str) -> LearnedPlacerInfo:
    placers = learned_placers()
    if name not in placers:
        raise SpecError(f"'{name}' is not a learned placer (learned placers: {', '.join(placers)})")
    return placers[name]


def config_fields(name: str) -> list[dataclasses.Field]:
    """The config fields of learned placer ``name`` (each with ``metadata`` doc, source, low, high, choices)."""
    return list(dataclasses.fields(_info(name).config))


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
        raise ValueError(f"parameter '{f.name}' must be {want}, got {value!r}")
    if want == "str" and meta.get("choices") and value not in meta["choices"]:
        raise ValueError(f"parameter '{f.name}' must be one of {', '.join(meta['choices'])}, got {value!r}")
    if want in ("int", "float"):
        lo, hi = meta.get("low"), meta.get("high")
        if not math.isfinite(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = ("finite" if lo is None else "> 0" if lo == 1e-12 else f">= {lo}") if hi is None else \
                f"in [{lo}, {hi}]"
            raise ValueError(f"parameter '{f.name}' must be {bounds}, got {value!r}")
        if want == "int" and hi is None and value > MAX_COUNT:  # every integer is a count or a size (engine/limits.py)
            raise ValueError(f"parameter '{f.name}' must be <= {MAX_COUNT:,} (placelab's limit MAX_COUNT), "
                             f"got {value:,}")
        return float(value) if want == "float" else value
    return value


def make_config(name: str, params: dict[str, Any]) -> LearnedConfig:
    """Learned placer ``name``'s config from ``params``; unknown keys or bad values give one-sentence SpecErrors."""
    fields = {f.name: f for f in config_fields(name)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise SpecError(f"learned placer '{name}' has no parameter '{unknown[0]}' "
                        f"(parameters: {', '.join(fields)})")
    try:
        return _info(name).config(**params)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"learned placer '{name}': {exc}") from None


def stored_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """A stored config's ``params`` with the values its missing fields stood for when it was stored
    (:attr:`LearnedConfig.STORED_DEFAULTS`)."""
    return {**_info(name).config.STORED_DEFAULTS, **params}


def make_agent(name: str, num_devices: int, params: dict[str, Any], *, seed: int = 0,
               tasks: Sequence[PlacementTask] = ()) -> Any:
    """A fresh agent of learned placer ``name``; what it fixes from ``tasks`` lands in ``agent.config``."""
    config = make_config(name, params)
    try:
        return _info(name).agent(num_devices, config, seed=seed, tasks=tasks)
    except ValueError as exc:
        raise SpecError(f"learned placer '{name}': {exc}") from None
