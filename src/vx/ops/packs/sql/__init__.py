"""The SQL family: text-to-SQL outputs graded by executing them on a warehouse.

Modules, one job each: ``data`` (defog-data dumps and question files), ``warehouse`` (DuckDB,
SQLite and Snowflake behind one read-only interface), ``compare`` (Spider 2.0 result comparison),
``catalog`` (schema catalogs and their text rendering), ``ops`` (the seed op pack, root
``parses``), ``templates`` (check templates and inducers for synthesis), ``mutate`` (the SQL
mutation engine), ``build`` (the family builder behind ``vx data build sql``).
"""
