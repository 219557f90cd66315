"""The report family: analyst-report sections written from audited evidence cards.

``pack`` (its Pack: ``packs = ["report"]``) · ``ops/`` (``static`` the seed ops and root, ``taxonomy``,
``templates``, ``judge``) · ``data/`` (``rubric`` a RAQS-style 0–100 scorer: the locked split's
reference signal, a partial proxy; ``degrade`` systematic degradations of golden sections; ``build``
the family builder) · shared by both: ``model`` (tasks: caliber, cards, metric vocabulary), ``parse``
(markdown → sections and sentences), ``figures`` (numbers in prose), ``lexicon`` (certainty,
filler and truncation cues).
"""
