"""Routing: which skills of the bank go into the prompt of one task.

A skill whose ``when`` is "always" applies to every task and competes with the fixed score
``general_score``; any other skill is scored by the TF-IDF cosine between the task's text and the skill's
name, ``when`` and lesson, and is eligible above ``min_similarity``. The ``k`` best go into the prompt
(ties: the skill born earlier, then the name). Word weights (IDF) are fitted on the training tasks' texts
only, so the held-out tasks shape nothing.

A dozen lines of TF-IDF are written here rather than pulling in a retrieval library: the bank holds tens
of short lessons, and the scores must be exactly reproducible.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from vx.ratchet.skills import Skill

_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")
_STOP = frozenset(
    """the and for with that this from are was were will would should could can not but you your
into onto over under than then them they their there these those have has had been being does did doing
each every any all some such only also more most less least very just its it's which what when where who
whom why how use using used return returns given list lists string strings number numbers value values
function functions write task tasks output outputs""".split()
)


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(str(text).lower().replace("-", " ")) if w not in _STOP]


class Router:
    def __init__(
        self, corpus: Iterable[str], *, k: int = 3, min_similarity: float = 0.1, general_score: float = 0.15
    ) -> None:
        docs = [set(words(t)) for t in corpus]
        n = max(1, len(docs))
        df: Counter[str] = Counter(w for d in docs for w in d)
        self._idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self._default_idf = math.log(1 + n) + 1.0  # a word no training task contains
        self.k, self.min_similarity, self.general_score = k, min_similarity, general_score

    def _vector(self, text: str) -> dict[str, float]:
        tf = Counter(words(text))
        v = {w: c * self._idf.get(w, self._default_idf) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}

    def similarity(self, task_text: str, skill: Skill) -> float:
        q = self._vector(task_text)
        d = self._vector(f"{skill.name} {skill.when} {skill.lesson}")
        return sum(x * d.get(w, 0.0) for w, x in q.items())

    def scores(self, task_text: str, skills: Sequence[Skill]) -> list[tuple[Skill, float]]:
        out = []
        for s in skills:
            score = self.general_score if s.general else self.similarity(task_text, s)
            if s.general or score >= self.min_similarity:
                out.append((s, score))
        return out

    def route(self, task_text: str, skills: Sequence[Skill]) -> list[str]:
        ranked = sorted(self.scores(task_text, skills), key=lambda p: (-round(p[1], 12), p[0].born, p[0].name))
        return [s.name for s, _ in ranked[: self.k]]
