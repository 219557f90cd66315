"""Warehouses: read-only execution with a time limit and a row cap; errors recorded, never raised.

DuckDB and SQLite run for real on a defog database built from the installed package. Snowflake
runs through the real `SnowflakeWarehouse` and credential lookup; only the connector's connection
object is stubbed (it executes on DuckDB), so no network is used.
"""

import pytest

pytest.importorskip("sqlglot")
duckdb = pytest.importorskip("duckdb")
pytest.importorskip("defog_data")  # the databases are built from its dumps

from vx.families.sql import warehouse as W  # noqa: E402

SPECS = {
    "duckdb": {"backend": "duckdb", "source": "defog", "database": "academic"},
    "sqlite": {"backend": "sqlite", "source": "defog", "database": "academic"},
}
SLOW = {
    "duckdb": "SELECT COUNT(*) FROM range(100000000000) a",
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
}


@pytest.fixture(params=["duckdb", "sqlite"])
def wh(request):
    w = W.open_warehouse(SPECS[request.param])
    yield w
    w.close()


def test_a_query_returns_columns_and_rows(wh):
    res = wh.execute("SELECT aid, name FROM author ORDER BY aid LIMIT 2")
    assert res.ok and res.columns == ("aid", "name")
    assert res.rows == ((1, "Larry Summers"), (2, "Ashish Vaswani"))
    assert not res.truncated and res.seconds >= 0


def test_row_cap_truncates_and_says_so(wh):
    res = wh.execute("SELECT aid FROM author", max_rows=3)
    assert res.ok and len(res.rows) == 3 and res.truncated


def test_syntax_and_runtime_errors_are_recorded(wh):
    bad = wh.execute("SELEC aid FROM author")
    assert not bad.ok and bad.error_kind == "syntax" and bad.rows == ()
    missing = wh.execute("SELECT nme FROM author")
    assert missing.error_kind == "runtime" and "nme" in missing.error


@pytest.mark.parametrize(
    "sql, why",
    [
        ("DELETE FROM author", "DELETE is not a read query"),
        ("DROP TABLE author", "DROP is not a read query"),
        ("SELECT 1; SELECT 2", "2 statements"),
        ("CREATE TABLE x AS SELECT 1", "CREATE is not a read query"),
    ],
)
def test_writes_and_multiple_statements_are_rejected(wh, sql, why):
    res = wh.execute(sql)
    assert res.error_kind == "rejected" and why in res.error


def test_the_engine_itself_is_read_only(wh):
    # below the statement check, the engine's own guards refuse a write (tests/hostile/test_sql_writes.py)
    with pytest.raises(W._QueryFailed, match="(?i)read.only|readonly|not authorized|only one read query"):
        wh._run("CREATE TABLE x (a INTEGER)", 1.0, 10)
    with pytest.raises(W._QueryFailed):
        wh._run("DELETE FROM author", 1.0, 10)
    assert wh.execute("SELECT COUNT(*) FROM author").rows[0][0] > 0


def test_timeout_interrupts_and_is_recorded(wh):
    kind = "duckdb" if isinstance(wh, W.DuckDBWarehouse) else "sqlite"
    res = wh.execute(SLOW[kind], timeout=1.5)
    assert res.error_kind == "timeout" and "1.5s" in res.error
    assert res.seconds < 6
    assert wh.execute("SELECT 1").ok  # the connection is usable afterwards


def test_duckdb_settings_suit_parallel_grading():
    with W.open_warehouse(SPECS["duckdb"]) as wh:
        settings = wh.execute(
            "SELECT current_setting('threads'), current_setting('enable_progress_bar'), current_setting('memory_limit')"
        )
    threads, bar, memory = settings.rows[0]
    assert threads == 1 and bar is False  # no progress bar drawn on the user's terminal
    assert memory.endswith(("MiB", "MB", "GiB", "GB")) and not memory.startswith(("0 ", "-"))


def test_tables_lists_columns_in_order(wh):
    t = wh.tables()
    assert [c for c, _ in t["author"]] == ["aid", "homepage", "name", "oid"]


def test_sessions_are_per_process_and_closable():
    a = W.session(SPECS["duckdb"])
    assert W.session(SPECS["duckdb"]) is a
    W.close_sessions()
    assert W.session(SPECS["duckdb"]) is not a


def test_bad_specs_are_explained(tmp_path):
    with pytest.raises(W.WarehouseError, match="unknown warehouse backend 'postgres'"):
        W.open_warehouse({"backend": "postgres"})
    with pytest.raises(W.WarehouseError, match="names no database"):
        W.open_warehouse({"backend": "duckdb"})
    with pytest.raises(W.WarehouseError, match="does not exist"):
        W.open_warehouse({"backend": "sqlite", "path": str(tmp_path / "none.sqlite")})


# --------------------------------------------------------------------------- Snowflake (stubbed connection)

sf_errors = None


class FakeCursor:
    """Snowflake's cursor surface (execute / description / fetchmany / fetchall / close) over DuckDB."""

    def __init__(self, conn):
        self.conn = conn
        self._cur = None
        self.description = None

    def execute(self, sql, *args, **kwargs):
        self.conn.statements.append(sql)
        if sql.startswith("ALTER SESSION"):
            self.conn.timeout = int(sql.rsplit("=", 1)[1])
            return self
        if "slow_table" in sql:
            raise sf_errors.ProgrammingError(
                "Statement reached its statement or warehouse timeout of "
                f"{self.conn.timeout} second(s) and was canceled.",
                errno=630,
            )
        try:
            self._cur = self.conn.db.execute(sql)
        except duckdb.Error as exc:
            raise sf_errors.ProgrammingError(f"SQL compilation error: {exc}", errno=904) from None
        self.description = self._cur.description
        return self

    def fetchmany(self, n):
        return self._cur.fetchmany(n)

    def fetchall(self):
        return self._cur.fetchall()

    def close(self):
        pass


class FakeConnection:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.statements = []
        self.timeout = None
        self.closed = False
        from vx.families.sql.defog import materialize

        self.db = duckdb.connect(str(materialize("academic")), read_only=True)

    def cursor(self):
        return FakeCursor(self)

    def close(self):
        self.closed = True
        self.db.close()


@pytest.fixture
def snowflake(monkeypatch, tmp_path):
    global sf_errors
    connector = pytest.importorskip("snowflake.connector")
    import snowflake.connector.errors as errors

    sf_errors = errors
    made = []

    def connect(**kwargs):
        made.append(FakeConnection(**kwargs))
        return made[-1]

    monkeypatch.setattr(connector, "connect", connect)
    for var in list(W.SNOWFLAKE_ENV) + ["SNOWFLAKE_DEFAULT_CONNECTION_NAME"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SNOWFLAKE_HOME", str(tmp_path / "sf-home"))
    return made


def test_snowflake_without_credentials_says_what_to_set(snowflake):
    with pytest.raises(W.WarehouseError) as e:
        W.open_warehouse({"backend": "snowflake", "database": "DB"})
    msg = str(e.value)
    assert "no Snowflake credentials" in msg and "SNOWFLAKE_ACCOUNT" in msg and "connections.toml" in msg
    assert not snowflake


def test_snowflake_credentials_from_environment(snowflake, monkeypatch):
    monkeypatch.setenv("SNOWFLAKE_ACCOUNT", "acme-x1")
    monkeypatch.setenv("SNOWFLAKE_USER", "ann")
    monkeypatch.setenv("SNOWFLAKE_PASSWORD", "pw")
    monkeypatch.setenv("SNOWFLAKE_WAREHOUSE", "WH")
    wh = W.open_warehouse({"backend": "snowflake", "database": "ACADEMIC", "schema": "PUBLIC"})
    assert snowflake[0].kwargs == {
        "account": "acme-x1",
        "user": "ann",
        "password": "pw",
        "warehouse": "WH",
        "database": "ACADEMIC",
        "schema": "PUBLIC",
    }
    res = wh.execute("SELECT aid, name FROM author ORDER BY aid LIMIT 1", timeout=7)
    assert res.ok and res.rows == ((1, "Larry Summers"),)
    assert "ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = 7" in snowflake[0].statements
    wh.close()
    assert snowflake[0].closed


def test_snowflake_connection_from_connections_toml(snowflake, tmp_path):
    home = tmp_path / "sf-home"
    home.mkdir()
    (home / "connections.toml").write_text('default_connection_name = "prod"\n[prod]\naccount = "a"\n')
    W.open_warehouse({"backend": "snowflake"})
    assert snowflake[-1].kwargs == {"connection_name": "prod"}
    with pytest.raises(W.WarehouseError, match="has no connection named 'dev'.*prod"):
        W.open_warehouse({"backend": "snowflake", "connection": "dev"})


def test_snowflake_errors_timeouts_and_strict_read_only(snowflake, monkeypatch):
    monkeypatch.setenv("SNOWFLAKE_ACCOUNT", "acme")
    wh = W.open_warehouse({"backend": "snowflake"})
    slow = wh.execute("SELECT * FROM slow_table", timeout=2)
    assert slow.error_kind == "timeout" and "2s" in slow.error
    bad = wh.execute("SELECT nme FROM author")
    assert bad.error_kind == "runtime" and "nme" in bad.error
    # SQL sqlglot cannot parse never reaches Snowflake (the session cannot be made read-only)
    n = len(snowflake[0].statements)
    rejected = wh.execute("SELECT FROM WHERE (")
    assert rejected.error_kind == "rejected" and "cannot be checked to be read-only" in rejected.error
    assert wh.execute("DELETE FROM author").error_kind == "rejected"
    assert len(snowflake[0].statements) == n


def test_snowflake_connect_failure_is_a_warehouse_error(snowflake, monkeypatch):
    import snowflake.connector as connector

    monkeypatch.setenv("SNOWFLAKE_ACCOUNT", "acme")

    def refuse(**kwargs):
        raise sf_errors.DatabaseError("Incorrect username or password was specified.", errno=390100)

    monkeypatch.setattr(connector, "connect", refuse)
    with pytest.raises(W.WarehouseError, match="cannot connect to Snowflake \\(acme\\).*Incorrect username"):
        W.open_warehouse({"backend": "snowflake"})


def test_a_warehouse_that_cannot_open_fails_fast_and_once(snowflake, monkeypatch):
    import snowflake.connector as connector

    monkeypatch.setenv("SNOWFLAKE_ACCOUNT", "acme")
    attempts = []

    def refuse(**kwargs):
        attempts.append(kwargs)
        raise sf_errors.OperationalError("could not connect", errno=250001)

    monkeypatch.setattr(connector, "connect", refuse)
    spec = {"backend": "snowflake"}
    for _ in range(3):
        with pytest.raises(W.WarehouseError, match="could not connect"):
            W.session(spec)
    assert len(attempts) == 1
    W.close_sessions()
    with pytest.raises(W.WarehouseError):
        W.session(spec)
    assert len(attempts) == 2


def test_exec_ops_record_an_unopenable_warehouse_as_an_error_and_abstain(snowflake, tmp_path):
    from vx.families.family import Item
    from vx.families.pack import pool_from_packs
    from vx.ops.apply import apply_ops

    task = {"id": "t", "question": "q", "dialect": "snowflake", "warehouse": {"backend": "snowflake"}}
    pool = pool_from_packs(["sql"])
    items = [Item(f"i{k}", "t", "SELECT 1") for k in range(3)]
    app = apply_ops(pool, items, {"t": task}, ops=["parses", "execution_error", "empty_result"], jobs=1, progress=False)
    assert set(app.matrix.column("execution_error").tolist()) == {-1}
    errs = [f for f in app.failures if f.op == "execution_error"]
    assert len(errs) == 3 and all("no Snowflake credentials" in f.error for f in errs)


@pytest.mark.data
def test_sqlite_and_duckdb_backends_agree_on_defog_gold_queries(questions_csv):
    """defog ships each question's gold SQL for SQLite and for PostgreSQL: run the first on the SQLite
    build and the others on the DuckDB build of the same dump, and compare with Spider's rules. This
    checks the dump loader, both backends and the comparator against each other on real data."""
    from vx.families.sql.compare import matches_any
    from vx.families.sql.defog import load_questions

    sqlite_csv = questions_csv.with_name("defog_questions_gen_sqlite.csv")
    if not sqlite_csv.exists():
        pytest.skip(f"{sqlite_csv} is absent")
    pg = {q.id: q for q in load_questions(questions_csv)}
    agree, differ = 0, []
    for q in load_questions(sqlite_csv):
        lite = W.session({"backend": "sqlite", "source": "defog", "database": q.database}).execute(q.gold[0])
        duck = W.session({"backend": "duckdb", "source": "defog", "database": q.database})
        golds = [r for r in (duck.execute(g) for g in pg[q.id].gold) if r.ok]
        if not lite.ok or not golds:
            continue  # dialect-specific functions (counted below)
        if matches_any(
            lite.rows,
            [g.rows for g in golds],
            ignore_order=True,
            pred_width=len(lite.columns),
            gold_widths=[len(g.columns) for g in golds],
        ):
            agree += 1
        else:
            differ.append(q.id)
    # measured: 184 agree; advising/0 (a month as text vs a timestamp) and yelp/17 differ; 4 do not run
    assert agree >= 180, differ
    assert len(differ) <= 3, differ
