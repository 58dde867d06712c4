"""A notebook exploring a store's whole DuckDB catalog, as a user's cell or marimo's data-source
panel does. Run as a script (`python catalog_notebook.py --db PATH`), it prints the listings as
one JSON line; the tests also import `catalog_listing` to run it in-process."""

import marimo

__generated_with = "0.25.2"
app = marimo.App()

with app.setup:
    import json

    import duckdb
    import marimo as mo
    from marimo._sql.engines.duckdb import DuckDBEngine

    from signet_bench.store.duck import connect_duckdb


@app.function
def catalog_listing(con: duckdb.DuckDBPyConnection) -> dict[str, list[list]]:
    """[schema, name] of every entry each catalog listing returns (marimo's data-source panel
    included), and [schema, view, rows] for every view, each one selected."""
    sql = {
        "show_all_tables": "SELECT schema, name FROM (SHOW ALL TABLES)",
        "duckdb_tables": "SELECT schema_name, table_name FROM duckdb_tables()",
        "information_schema": "SELECT table_schema, table_name FROM information_schema.tables",
        "duckdb_columns": "SELECT DISTINCT schema_name, table_name FROM duckdb_columns()"
        " WHERE NOT internal",
        "duckdb_views": "SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal",
    }
    out = {name: [list(r) for r in con.sql(q).fetchall()] for name, q in sql.items()}
    panel = DuckDBEngine(con).get_databases(
        include_schemas=True, include_tables=True, include_table_details=True
    )
    out["marimo_panel"] = [
        [s.name, t.name] for d in panel if d.name == "memory" for s in d.schemas for t in s.tables
    ]
    out["view_rows"] = [
        [s, v, con.sql(f'SELECT COUNT(*) FROM "{s}"."{v}"').fetchone()[0]]
        for s, v in out["duckdb_views"]
    ]
    return out


@app.cell
def _():
    _con = connect_duckdb(mo.cli_args().get("db"))
    print(json.dumps(catalog_listing(_con)))
    _con.close()


if __name__ == "__main__":
    app.run()
