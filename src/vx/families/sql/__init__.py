"""The SQL family: text-to-SQL outputs graded by executing them on a warehouse.

``pack`` (its Pack: ``packs = ["sql"]``) · ``ops/`` (``item``, ``analysis``, ``static``, ``exec``,
``taxonomy``, ``templates``, ``judge``) · ``data/`` (``mutate`` the SQL mutation engine, ``build`` the
family builder behind ``vx data build sql``) · shared by both: ``defog`` (defog-data dumps, local
database files, defog question files), ``warehouse`` (DuckDB, SQLite and Snowflake behind one
read-only interface), ``compare`` (Spider 2.0 result comparison), ``catalog`` (schema catalogs, their
text rendering, the solver prompt).
"""
