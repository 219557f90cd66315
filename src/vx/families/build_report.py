"""What every family builder returns (``vx data build`` prints it): the directory it wrote, the counts and
provenance it recorded, the notes for a person, and, in memory only, every written item's ground-truth label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

__all__ = ["BuildReport"]


@attrs.define
class BuildReport:
    """What a build wrote and measured."""

    out_dir: Path
    counts: dict[str, Any]
    provenance: dict[str, Any]
    notes: list[str] = attrs.field(factory=list)
    #: every written item's ground-truth label by id (train, dev and locked), for a benchmark that measures
    #: design choices on the train split; kept in memory only, never written into the family
    truth: dict[str, str] = attrs.field(factory=dict, repr=False)
