"""Django database backend: SQLite through pysqlite3 with the sqlite-vec extension loaded.

docs/decisions.md, foundation 1. The stock Python here (and many users') cannot load SQLite extensions, so this
backend swaps in `pysqlite3` (a self-contained SQLite build that can) before Django's SQLite backend
is imported, then loads `sqlite_vec` into every new connection. Settings: ENGINE "ottoweb.db".
"""
