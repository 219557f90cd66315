"""The report family: analyst-report sections written from audited evidence cards.

``model`` (tasks: caliber, cards, metric vocabulary, golden section) · ``parse`` (markdown →
sections and sentences) · ``figures`` (numbers in prose) · ``ops`` (the seed op pack and root) ·
``templates`` (check templates + inducers for synthesis) · ``taxonomy`` (closed failure classes) ·
``rubric`` (a RAQS-style 0–100 scorer: the locked split's reference signal, a partial proxy) ·
``degrade`` (systematic degradations of golden sections) · ``build`` (the family builder) ·
``judge`` (opt-in LLM judge ops).
"""
