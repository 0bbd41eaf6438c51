"""Steps 1 and 2 of the fast path, for one chunk, in a preparing thread.

1. **Keys and JSON types**, by msgspec (:mod:`.checker`) on the shape thread, while
2. **one query** reads the chunk with DuckDB's typed ``read_json`` straight into
   episodes rows (:func:`.sql.select_rows`) in an in-memory table (:data:`.staging.SCRATCH`),
   with per row the first problem that needs the exact path and whether any text cell
   may hold a credential (:func:`evalatlas.store.redaction.row_gate`); one aggregate
   then gives the verdict (no problem, no duplicate key in the chunk) and the few
   flagged rows are redacted in place (:func:`evalatlas.store.redaction.redact_flagged`).

msgspec picks out experiment records and measurements mixed in (their rows are
deleted from the staged table; the exact path reads them). A chunk msgspec does not
vouch for (a wrong type, a blank line, no msgspec) is staged again the slow way: the
shape pass (:mod:`.shapes`) beside a typed read that checks each scalar's JSON type
from its text.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import numpy as np

import evalatlas.store.fast_jsonl.contract as c
import evalatlas.store.fast_jsonl.sql as sql
from evalatlas.adapters.jsonl_stream import Chunk
from evalatlas.safe_write import reason
from evalatlas.store.fast_jsonl.checker import vouch
from evalatlas.store.fast_jsonl.shapes import Shapes, check_shapes
from evalatlas.store.fast_jsonl.staging import SCRATCH, scratch_instance
from evalatlas.store.fast_jsonl.state import NotClean, Prepared
from evalatlas.store.redaction import redact_flagged, row_gate


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
            return self._prepare(chunk, sql.sql_str(tmp), seq)
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

    def _prepare(self, chunk: Chunk, src: str, seq: int) -> Prepared:
        # msgspec checks keys and JSON types (shape thread, holding the GIL) while DuckDB
        # reads the chunk straight into episodes rows (this thread, without it): one
        # query reads, converts, flags problems and redacts, so the chunk is materialised
        # once. A chunk msgspec does not vouch for is read again the slow, checked way.
        validating = self._shape_thread.submit(self._clean, chunk)
        rows = f"{SCRATCH}.rows_{seq}"
        cur = self.cur
        other_lines: list[int] = []
        try:
            read_error: duckdb.Error | None = None
            try:
                self._stage(rows, f"""(
                    SELECT * EXCLUDE (ordinality),
                      ordinality + {chunk.first_line - 1} AS _line,
                      true AS _types_ok, false AS _bad_list, false AS _bad_scores,
                      {sql.free_flags(self.max_depth, huge_in=("findings",))}
                    FROM read_json({src}, format='newline_delimited',
                                   columns={sql.PLAIN_COLUMNS},
                                   maximum_object_size={self.max_object}) WITH ORDINALITY)""")
            except duckdb.Error as exc:
                read_error = exc
            vouched = validating.result()
            if vouched is None or read_error is not None:
                cur.execute(f"DROP TABLE IF EXISTS {rows}")
                other_lines = self._stage_checked(chunk, src, rows)
            elif vouched:  # experiment records or measurements: the exact path's
                other_lines = vouched
                lines = ", ".join(str(chunk.first_line - 1 + i) for i in vouched)
                cur.execute(f"DELETE FROM {rows} WHERE _line IN ({lines})")
            n, unpriced = self._check(rows, src)
            hashes = cur.execute(f"SELECT _h FROM {rows}").fetchnumpy()["_h"]
        except duckdb.Error as exc:
            cur.execute(f"DROP TABLE IF EXISTS {rows}")
            raise NotClean(f"DuckDB could not read it as clean records: {exc}") from exc
        except BaseException:
            cur.execute(f"DROP TABLE IF EXISTS {rows}")
            raise
        finally:
            validating.exception()
        return Prepared(chunk, table=rows, other_lines=other_lines, n=n, unpriced=unpriced,
                        hashes=np.asarray(hashes, dtype=np.uint64))

    def _stage(self, rows: str, source: str) -> None:
        """Create ``rows``: the episodes rows of the typed read ``source``, with
        ``_line``, ``_problem``, ``_maybe_secret`` (see :meth:`_check`) and the key's hash
        ``_h`` (:func:`~.sql.key_hash`)."""
        gate = row_gate("episodes", self._row_types)
        self.cur.execute(f"CREATE TABLE {rows} AS SELECT *, {gate} AS _maybe_secret, "
                         f"{sql.key_hash()} AS _h FROM ({sql.select_rows(source)})")

    def _clean(self, chunk: Chunk) -> list[int] | None:
        """msgspec's verdict (:func:`.checker.vouch`): None, or the chunk's lines that
        are not episodes."""
        return vouch()(chunk.data, chunk.n_lines, chunk.size)

    def _stage_checked(self, chunk: Chunk, src: str, rows: str) -> list[int]:
        """The slow way to stage a chunk msgspec did not vouch for: the shape pass
        (names the first offending key or container, picks out experiment records)
        beside a typed read that checks every scalar's JSON type from its text.
        Returns the lines (1-based in the chunk) that are not episodes."""
        shaping = self._shape_thread.submit(self._shapes, src)
        try:
            read_error: duckdb.Error | None = None
            try:
                recast = ", ".join([f"{k}::VARCHAR[] AS {k}" for k in c.STRING_LISTS] + [
                    f"json_transform({k}, '\"MAP(VARCHAR, DOUBLE)\"') AS {k}"
                    for k in c.FINITE_MAPS])
                self._stage(rows, f"""(
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
            if shapes.other_lines:
                lines = ", ".join(str(chunk.first_line - 1 + i) for i in shapes.other_lines)
                self.cur.execute(f"DELETE FROM {rows} WHERE _line IN ({lines})")
        finally:
            shaping.exception()  # never leave the shape thread reading a deleted file
        return shapes.other_lines

    def _check(self, rows: str, src: str) -> tuple[int, bool]:
        """Step 2's verdict on the staged rows: their number and whether some row has
        tokens but no cost (to price at commit), or NotClean with every reason (and how
        many rows have it)."""
        n, dups, problems, secret, unpriced = self.cur.execute(
            # duplicates by key hash: a (negligible) collision only sends the chunk to
            # the exact path, which decides
            f"SELECT count(*), count(*) - count(DISTINCT _h), "
            f"list(_problem) FILTER (WHERE _problem IS NOT NULL), "
            f"count(*) FILTER (WHERE _maybe_secret), "
            f"count(*) FILTER (WHERE cost_usd IS NULL AND (prompt_tokens IS NOT NULL "
            f"OR completion_tokens IS NOT NULL)) FROM {rows}").fetchall()[0]
        if not problems and not dups:
            if secret:  # redact the few rows that may hold a credential, in place
                redact_flagged(self.cur, rows, self._row_types, "_maybe_secret")
            return int(n), bool(unpriced)
        counts = {name: 0 for name, _ in sql.PROBLEMS}
        for name in problems or ():
            counts[name] += 1
        counts[sql.DUPLICATES] = dups
        bad = [f"{name}: {k}" for name, k in counts.items() if k]
        if counts[sql.WRONG_TYPE]:  # name the first field of the wrong JSON type
            bad[0] = self._diagnose(src) or bad[0]
        raise NotClean("; ".join(bad))
