"""Database helpers that several apps need (glue: it knows no app's models by name)."""

from __future__ import annotations

from typing import Any

from django.db import connection, models


def refresh_planner_statistics(*tables: type[models.Model]) -> None:
    """Update the database's statistics of these models' tables after bulk writes.

    Right after tens of thousands of rows arrive, PostgreSQL still believes the tables are nearly
    empty and joins them with nested loops: the leaderboard query took 44 s instead of tens of ms
    in bench/leaderboard.py until the tables were analysed. Autovacuum would catch up within
    minutes; a judge run or an import does it at once (ANALYZE samples, it does not scan).
    """
    with connection.cursor() as cursor:
        for model in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def compare_and_set(rows: models.QuerySet[Any], **values: Any) -> int:
    """Write `values` to `rows` in one UPDATE whose conditions all sit on the updated rows; return
    how many rows it wrote.

    This is the one way to write "only if it is still X". A condition through a join (for example
    `.exclude(item__state=...)`) makes Django write `WHERE id IN (SELECT … WHERE version = …)`.
    Under PostgreSQL's READ COMMITTED, a second writer waiting for the first one's row lock then
    re-checks only `id IN (…)` against the subquery's old snapshot and overwrites: both callers
    are told they won (issue #30: two tabs autosaving one annotation both got 200). Conditions on
    the row itself (and `Exists(...)` subqueries over `OuterRef`) are re-checked on the row the
    lock waited for, so exactly one writer wins. Refuse any other shape instead of losing a save.
    """
    query = rows.query.chain()
    query.get_initial_alias()
    if query.count_active_tables() > 1:
        raise ValueError(
            f"compare_and_set on {rows.model.__name__}: a condition joins another table; "
            "write it as Exists(...) over OuterRef so the check stays on the updated row"
        )
    return rows.update(**values)
