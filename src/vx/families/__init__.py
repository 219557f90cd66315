"""Task families: the Family (family.toml, splits, the audit object) and the Pack contract.

``family`` (:class:`~vx.families.family.Family`, loaded from a directory; ``evolution_view()`` and
``audit()`` keep the locked labels away from evolution) · ``pack`` (:class:`~vx.families.pack.Pack`:
ops, root, taxonomy, failure classifier, check templates; loading by name, entry point or file) ·
one folder per family vx ships: ``code``, ``sql``, ``report``, ``tools``.
"""
