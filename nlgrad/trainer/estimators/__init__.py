"""The advantage estimators of ``nlgrad train --method NAME``: a registry, one estimator per module.

Each module defines one estimator (see :mod:`nlgrad.trainer.estimators.base`: its name, the options it reads, its
default normalization, its capabilities, and ``advantages(groups, context)``). :data:`ESTIMATORS` is the registry the
trainer chooses from; :func:`estimator_options` gives every option once, in registry order, for
:class:`~nlgrad.trainer.config.TrainConfig`'s fields and ``nlgrad train``'s flags. An option several estimators read
(``gamma``, ``omega``, ``progpo_step``) is declared once and shared; two different declarations of one name are
refused at import. To add a method: a module here with its estimator, and its name in ``_ORDER``.

Every registered method is also a row of ``nlgrad compare``: ``train:<name>`` (:data:`COMPARE_PREFIX`;
:func:`compare_rows` lists them, :func:`row_estimator` reads one), run by :mod:`nlgrad.trainer.compare_row`.
"""

from __future__ import annotations

from nlgrad.trainer.estimators.actguide import ACTGUIDE
from nlgrad.trainer.estimators.base import AdvantageEstimator, EstimatorOption, StepAdvantages, StepContext
from nlgrad.trainer.estimators.cigpo import CIGPO_ESTIMATOR
from nlgrad.trainer.estimators.gigpo import GIGPO
from nlgrad.trainer.estimators.grpo import GRPO
from nlgrad.trainer.estimators.hidifftir import HIDIFFTIR
from nlgrad.trainer.estimators.iapo import IAPO
from nlgrad.trainer.estimators.milegpo import MILEGPO
from nlgrad.trainer.estimators.progpo import PROGPO
from nlgrad.trainer.estimators.stapo import STAPO_ESTIMATOR
from nlgrad.trainer.estimators.tapo import TAPO
from nlgrad.trainer.estimators.tigpo import TIGPO

_ORDER: tuple[AdvantageEstimator, ...] = (GRPO, GIGPO, PROGPO, CIGPO_ESTIMATOR, HIDIFFTIR, MILEGPO, TIGPO, ACTGUIDE,
                                          TAPO, STAPO_ESTIMATOR, IAPO)
ESTIMATORS: dict[str, AdvantageEstimator] = {e.name: e for e in _ORDER}
METHODS: tuple[str, ...] = tuple(ESTIMATORS)


def get_estimator(name: str) -> AdvantageEstimator:
    try:
        return ESTIMATORS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}") from None


COMPARE_PREFIX = "train:"  # nlgrad compare's name of a trainer row: train:<method>


def compare_rows() -> list[str]:
    """The ``nlgrad compare`` names of the registered methods: ``train:grpo``, ``train:gigpo``, ..."""
    return [COMPARE_PREFIX + name for name in METHODS]


def row_estimator(row: str) -> AdvantageEstimator | None:
    """The estimator a compare row ``train:<name>`` names; None for a name without the prefix (a text method). An
    unknown ``<name>`` is a ValueError listing the known ones."""
    if not row.startswith(COMPARE_PREFIX):
        return None
    return get_estimator(row[len(COMPARE_PREFIX):])


def estimator_options() -> dict[str, EstimatorOption]:
    """Every estimator option once, by name, in registry order (an option shared by estimators must be one object)."""
    out: dict[str, EstimatorOption] = {}
    for estimator in _ORDER:
        for option in estimator.options:
            if out.setdefault(option.name, option) != option:
                raise ValueError(f"option {option.name!r} is declared differently by {estimator.name!r}")
    return out


def methods_declaring(name: str) -> list[str]:
    """The methods that read option ``name``."""
    return [e.name for e in _ORDER if any(o.name == name for o in e.options)]


__all__ = ["COMPARE_PREFIX", "ESTIMATORS", "METHODS", "AdvantageEstimator", "EstimatorOption", "StepAdvantages", "StepContext",
           "compare_rows", "estimator_options", "get_estimator", "methods_declaring", "row_estimator"]
