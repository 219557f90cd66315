"""The SQL family: text-to-SQL outputs graded by executing them on a warehouse.

Modules, one job each: ``data`` (defog-data dumps, local database files, defog question files),
``warehouse`` (DuckDB, SQLite and Snowflake behind one read-only interface), ``compare`` (Spider 2.0
result comparison), ``catalog`` (schema catalogs, their text rendering, the solver prompt),
``item`` (what ops read from a task, the shared parse and execution), ``analysis`` (static analysis
of parsed SQL and of questions), ``ops`` (the seed op pack, root ``parses``), ``judge`` (the opt-in
LLM judge op), ``templates`` (check templates and inducers for synthesis), ``mutate`` (the SQL
mutation engine), ``build`` (the family builder behind ``vx data build sql``).
"""
