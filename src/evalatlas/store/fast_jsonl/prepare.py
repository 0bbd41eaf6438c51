"""Steps 1 and 2 of the fast path, for one chunk, in a preparing thread.

1. **Keys and JSON types**, by msgspec (:mod:`.checker`) on the shape thread, while
2. **one query** reads the chunk with DuckDB's typed ``read_json`` straight into
   episodes rows (:func:`.sql.select_rows`), with per row the first problem that needs
   the exact path and the key's hash, fetched as an Arrow table
   (:attr:`~.state.Prepared.rows`); the verdict (no problem, no duplicate key in the
   chunk) is taken in Arrow, and the few rows that may hold a credential are redacted
   (:func:`evalatlas.store.redaction.redact_arrow`: a gate over each column's distinct
   values, then the exact path's redaction of the flagged rows).

Why Arrow, not a table of an in-memory database attached to the store's instance (until
arrow7): the table's ``CREATE TABLE AS`` with the gate in SQL (every row's cells joined
and scanned by RE2), the aggregate over it and an ``UPDATE`` through UDFs for the
flagged rows cost more than the same read fetched to Arrow with the gate over distinct
values. Per 61,440-line chunk, CPU, medians of 8 (``/work/scale/arrow7/micro/pm.py``
and ``pmy.py``, load 1-4): ``prepare`` 401-437 -> 338-341 ms; the query alone ~192 ms,
the gate 11 (21 scanning every ``tool_names`` item), the verdict in Arrow 4 (one DuckDB
aggregate over the registered table: 7). The whole ingest of 1M episodes: 12.4-12.7
-> 11.1-11.8 CPU s (the mixed file 13.6-14.2 -> 12.3-12.5). The query is run as a
relation (``cursor.sql``), whose result DuckDB collects straight into Arrow: through
``execute`` it was first materialised in DuckDB's own format, and the process's peak
RSS at 1M episodes was ~1,160 MB instead of ~1,005 (the first arrow7 commit; ~935
before arrow7).

msgspec picks out experiment records and measurements mixed in (their rows are left
out of the staged table; the exact path reads them). A chunk msgspec does not vouch
for (a wrong type, a blank line, no msgspec) is staged again the slow way: the shape
pass (:mod:`.shapes`) beside a typed read that checks each scalar's JSON type from its
text, into the same Arrow table.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np

import evalatlas.store.fast_jsonl.contract as c
import evalatlas.store.fast_jsonl.sql as sql
from evalatlas.adapters.jsonl_stream import Chunk
from evalatlas.safe_write import reason
from evalatlas.store.fast_jsonl.checker import vouch
from evalatlas.store.fast_jsonl.shapes import Shapes, check_shapes
from evalatlas.store.fast_jsonl.staging import scratch_instance
from evalatlas.store.fast_jsonl.state import NotClean, Prepared
from evalatlas.store.redaction import redact_arrow

if TYPE_CHECKING:
    import pyarrow as pa


class Preparer:
    """The preparing side of :class:`~evalatlas.store.fast_jsonl.run.FastJsonl`: touches
    only the scratch instance, its shape thread and one cursor per thread on the
    store's instance (set up by ``FastJsonl``)."""

    con: duckdb.DuckDBPyConnection
    tmpdir: str
    max_depth: int
    max_object: int
    scratch: duckdb.DuckDBPyConnection
    _row_types: dict[str, str]
    _seq: itertools.count
    _shape_thread: ThreadPoolExecutor
    _local: threading.local
    _cursors: list[duckdb.DuckDBPyConnection]
    _cursor_lock: threading.Lock

    @property
    def cur(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the store's instance."""
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self.con.cursor()
            cur.execute("SET enable_progress_bar = false")
            with self._cursor_lock:
                self._cursors.append(cur)
            self._local.cur = cur
        return cur

    def prepare(self, chunk: Chunk) -> Prepared:
        """Steps 1 and 2 for ``chunk``: staged, checked and redacted rows ready to commit,
        or the reason it needs the exact path. Runs in a preparing thread."""
        if chunk.oversized:
            return Prepared(chunk, reason="a line is over the length limit")
        seq = next(self._seq)
        tmp = os.path.join(self.tmpdir, f"chunk-{seq}.jsonl")
        try:
            Path(tmp).write_bytes(chunk.view)
        except OSError as exc:  # $TMPDIR full or gone: this chunk takes the exact path
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return Prepared(chunk, reason=f"cannot stage the chunk in {self.tmpdir}: "
                            f"{reason(exc)}")
        try:
            return self._prepare(chunk, sql.sql_str(tmp))
        except NotClean as exc:
            return Prepared(chunk, reason=str(exc))
        finally:
            os.unlink(tmp)

    def _shapes(self, src: str) -> Shapes:
        """The shape pass (on the shape thread, private instance)."""
        try:
            return check_shapes(self.scratch, src, self.max_object)
        except duckdb.FatalException as exc:  # the scratch instance is gone; renew it
            self.scratch = scratch_instance()
            raise NotClean(f"DuckDB could not read it: {exc}") from exc
        except duckdb.Error as exc:
            raise NotClean(f"DuckDB could not read it as clean records: {exc}") from exc

    def _diagnose(self, src: str) -> str | None:
        """Which field has the wrong JSON type (a second parse, only for a declined
        chunk; the fast path itself only counts such lines). On the shape thread, which
        owns the scratch instance."""
        def run() -> str | None:
            try:
                check_shapes(self.scratch, src, self.max_object, c.ALL_TYPE_PATHS)
            except (NotClean, duckdb.Error) as exc:
                return str(exc)
            return None
        return self._shape_thread.submit(run).result()

    def _prepare(self, chunk: Chunk, src: str) -> Prepared:
        # msgspec checks keys and JSON types (shape thread, holding the GIL) while DuckDB
        # reads the chunk straight into episodes rows in Arrow (this thread, without
        # it): one query reads, converts and flags problems, so the chunk is
        # materialised once. A chunk msgspec does not vouch for is read again the slow,
        # checked way.
        validating = self._shape_thread.submit(self._clean, chunk)
        other_lines: list[int] = []
        try:
            rows: pa.Table | None = None
            with contextlib.suppress(duckdb.Error):  # then the checked read below decides
                rows = self._stage(f"""(
                    SELECT * EXCLUDE (ordinality),
                      ordinality + {chunk.first_line - 1} AS _line,
                      true AS _types_ok, false AS _bad_list, false AS _bad_scores,
                      {sql.free_flags(self.max_depth, huge_in=("findings",))}
                    FROM read_json({src}, format='newline_delimited',
                                   columns={sql.PLAIN_COLUMNS},
                                   maximum_object_size={self.max_object}) WITH ORDINALITY)""")
            vouched = validating.result()
            if vouched is None or rows is None:
                rows = None  # freed before the second read
                rows, other_lines = self._stage_checked(chunk, src)
            elif vouched:  # experiment records or measurements: the exact path's
                other_lines = vouched
                rows = _without_lines(rows, chunk, vouched)
            rows = _in_line_order(rows)
            n, unpriced = self._check(rows, src)
            # redact the few rows that may hold a credential
            rows = redact_arrow("episodes", rows, self._row_types)
        except duckdb.Error as exc:
            raise NotClean(f"DuckDB could not read it as clean records: {exc}") from exc
        finally:
            validating.exception()
        return Prepared(chunk, rows=rows, other_lines=other_lines, n=n, unpriced=unpriced)

    def _stage(self, source: str) -> pa.Table:
        """The episodes rows of the typed read ``source``, with ``_line``, ``_problem``
        and the key's hash ``_h`` (:func:`~.sql.key_hash`), in Arrow."""
        return self.cur.sql(f"SELECT *, {sql.key_hash()} AS _h "
                            f"FROM ({sql.select_rows(source)})").to_arrow_table()

    def _clean(self, chunk: Chunk) -> list[int] | None:
        """msgspec's verdict (:func:`.checker.vouch`): None, or the chunk's lines that
        are not episodes."""
        return vouch()(chunk.data, chunk.n_lines, chunk.size)

    def _stage_checked(self, chunk: Chunk, src: str) -> tuple[pa.Table, list[int]]:
        """The slow way to stage a chunk msgspec did not vouch for: the shape pass
        (names the first offending key or container, picks out experiment records)
        beside a typed read that checks every scalar's JSON type from its text.
        Returns the staged rows and the lines (1-based in the chunk) that are not
        episodes (their rows left out)."""
        shaping = self._shape_thread.submit(self._shapes, src)
        try:
            read_error: duckdb.Error | None = None
            rows: pa.Table | None = None
            try:
                recast = ", ".join([f"{k}::VARCHAR[] AS {k}" for k in c.STRING_LISTS] + [
                    f"json_transform({k}, '\"MAP(VARCHAR, DOUBLE)\"') AS {k}"
                    for k in c.FINITE_MAPS])
                rows = self._stage(f"""(
                    SELECT {sql.TYPED},
                      ordinality + {chunk.first_line - 1} AS _line, {recast},
                      {sql.stage_flags(self.max_depth)}
                    FROM (SELECT *, {sql.CONVERTED}
                          FROM read_json({src}, format='newline_delimited',
                                         columns={sql.READ_COLUMNS},
                                         maximum_object_size={self.max_object})
                          WITH ORDINALITY))""")
            except duckdb.Error as exc:
                read_error = exc
            shapes = shaping.result()  # its NotClean comes first: it names the field
            if shapes.n_objects != chunk.n_lines:
                raise NotClean(f"{chunk.n_lines} lines but {shapes.n_objects} JSON objects "
                               "(blank lines?)")
            if read_error is not None:
                raise read_error
            assert rows is not None
            if shapes.other_lines:
                rows = _without_lines(rows, chunk, shapes.other_lines)
        finally:
            shaping.exception()  # never leave the shape thread reading a deleted file
        return rows, shapes.other_lines

    def _check(self, rows: pa.Table, src: str) -> tuple[int, bool]:
        """Step 2's verdict on the staged rows: their number and whether some row has
        tokens but no cost (to price at commit), or NotClean with every reason (and how
        many rows have it). In Arrow: ~4 ms of CPU a 61,440-line chunk, where one DuckDB
        aggregate over the registered table cost ~7 (arrow7)."""
        import pyarrow.compute as pc

        n = rows.num_rows
        # duplicates by key hash: a (negligible) collision only sends the chunk to the
        # exact path, which decides
        dups = n - pc.count_distinct(rows.column("_h")).as_py()
        problems = rows.column("_problem")
        if problems.null_count == n and not dups:
            unpriced = pc.any(pc.and_(
                pc.is_null(rows.column("cost_usd")),
                pc.or_(pc.is_valid(rows.column("prompt_tokens")),
                       pc.is_valid(rows.column("completion_tokens"))))).as_py()
            return n, bool(unpriced)
        counts = {name: 0 for name, _ in sql.PROBLEMS}
        for item in pc.value_counts(problems.drop_null()).to_pylist():
            counts[item["values"]] += item["counts"]
        counts[sql.DUPLICATES] = dups
        bad = [f"{name}: {k}" for name, k in counts.items() if k]
        if counts[sql.WRONG_TYPE]:  # name the first field of the wrong JSON type
            bad[0] = self._diagnose(src) or bad[0]
        raise NotClean("; ".join(bad))


def _in_line_order(rows: pa.Table) -> pa.Table:
    """``rows`` sorted by ``_line`` (the commit writes a chunk in parts by slicing it,
    see :meth:`~evalatlas.store.fast_jsonl.commit.Committer._part`); DuckDB's read on
    one thread gives them in order already, so this is a check (~0.1 ms)."""
    lines = np.asarray(rows.column("_line"))
    if lines.size < 2 or bool((lines[1:] > lines[:-1]).all()):
        return rows
    return rows.sort_by("_line")


def _without_lines(rows: pa.Table, chunk: Chunk, lines: list[int]) -> pa.Table:
    """``rows`` without those of ``lines`` (1-based in ``chunk``), as slices of ``rows``
    (no copy). Why not ``Table.filter``: it copies the chunk's ~33 MB into new memory,
    and a mixed file's every chunk has such lines: ~20 ms of CPU a chunk plus ~10k page
    faults (+170k minor faults, +1 s of system CPU for 1M episodes, arrow7)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    drop = pa.array([chunk.first_line - 1 + i for i in lines], type=pa.int64())
    at = np.flatnonzero(np.asarray(pc.is_in(rows.column("_line"), value_set=drop)))
    if at.size == 0:
        return rows
    starts = np.concatenate([[0], at + 1])
    ends = np.concatenate([at, [rows.num_rows]])
    parts = [rows.slice(int(s), int(e - s)) for s, e in zip(starts, ends, strict=True) if e > s]
    # a chunk of experiment records only keeps no row (concat_tables wants one table)
    return pa.concat_tables(parts) if parts else rows.slice(0, 0)
