"""Items: the outputs vx grades, one record each (what op application and verifiers consume).

Families load them from their split files (:mod:`vx.families.family`); an agent loop builds them
directly::

    from vx import Item
    items = [Item(id=f"attempt-{k}", task="HumanEval/0", output=code) for k, code in enumerate(attempts)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs


def parse_label(value: Any) -> float:
    """'pass' → 1.0, 'fail' → 0.0, a probability of PASS in [0, 1] → itself. Raises ValueError."""
    if isinstance(value, str) and value.strip().lower() in ("pass", "fail"):
        return 1.0 if value.strip().lower() == "pass" else 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1:
        return float(value)
    raise ValueError(f'label {value!r} must be "pass", "fail" or a probability of pass in [0, 1]')


@attrs.frozen
class Item:
    """One output to grade. `label` is P(pass) (1.0 pass, 0.0 fail) or None when unlabeled."""

    id: str
    task: str
    output: Any
    label: float | None = None
    reference: Any = None
    meta: Mapping[str, Any] = attrs.field(factory=dict, eq=False)
    line: int = attrs.field(default=0, eq=False)

    def hard_label(self) -> str | None:
        """'pass' / 'fail' (a soft label is thresholded at 0.5), or None when unlabeled."""
        if self.label is None:
            return None
        return "pass" if self.label >= 0.5 else "fail"
