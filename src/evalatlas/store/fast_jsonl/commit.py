"""Step 3 of the fast path, on the caller's thread: staged chunks into ``episodes``.

No key may be taken by an earlier chunk of the file; then, for a group of chunks that
fills whole DuckDB row groups (the chunker cuts them so, see
:data:`~evalatlas.adapters.jsonl_stream.ROW_GROUP_LINES`), delete-then-insert into
``episodes`` plus one batch row, in one transaction (the exact path's guarantee per
batch). Whole row groups go straight into the database file, compressed; fewer rows
would go to the write-ahead log first and be compressed at the next checkpoint
(measured: the commit's CPU halved at 1M episodes). A group holds at most ~128 MB of
input (longer rows commit chunk by chunk). If writing a group fails, it is rolled back
and its chunks take the exact path.

``_fast_seen`` holds a hash and line per episode key already taken by this file (the
exact path names the earlier line from it); the same hashes in sorted numpy blocks
(:mod:`.seen`) give the fast duplicate check of each chunk in O(chunk log n), where a
join against ``_fast_seen`` cost O(n) per chunk. Neither keeps every key in Python.
"""

from __future__ import annotations

import contextlib

import duckdb
import numpy as np

from evalatlas import interrupts
from evalatlas.pricing import Pricing
from evalatlas.store.costs import complete_batch
from evalatlas.store.db import StoreConnection
from evalatlas.store.fast_jsonl.seen import SeenHashes
from evalatlas.store.fast_jsonl.sql import key_hash, sql_str
from evalatlas.store.fast_jsonl.state import Group, GroupLost, NotClean, Prepared


class Committer:
    """The committing side of :class:`~evalatlas.store.fast_jsonl.run.FastJsonl` (its
    state is set up there)."""

    store: StoreConnection
    pricing: Pricing
    con: duckdb.DuckDBPyConnection
    source: str
    group: Group | None
    seen: SeenHashes
    _replaces: bool

    def insert(self, prep: Prepared, batch_id: int) -> None:
        """Add the staged episodes to the open group (opening one as batch ``batch_id``);
        :meth:`flush` writes the group in one transaction, which the caller does after a
        chunk that :attr:`~evalatlas.adapters.jsonl_stream.Chunk.closes` a row group and
        before anything else writes. Raise NotClean (the group unchanged) when a key was
        already used by an earlier chunk.

        Why the write waits for the group's last chunk: a transaction sees only the
        tables committed before it began, and the preparing threads create each chunk's
        table while the one before is being written."""
        assert prep.table is not None and prep.hashes is not None
        group = self.group
        dup = self.seen.count(prep.hashes)  # this input's keys so far, the open group's too
        if dup:
            raise NotClean(f"duplicate trajectory_id with an earlier chunk: {dup}")
        self.seen.add(prep.hashes)
        if group is None:
            group = self.group = Group(batch_id)
        group.preps.append(prep)
        group.n += prep.n
        group.unpriced = group.unpriced or prep.unpriced

    def _any_stored(self, rows: str | None) -> bool:
        """Whether any of ``rows``' keys is stored already. On a lake, a DELETE only when
        one is: DuckLake's DELETE over a lake that four writers filled with 1M-episode
        files crashed the process (segfault inside ``ducklake.duckdb_extension``, duckdb
        1.5.5, measured: BENCHMARKS.md), where this read of the same keys does not; a
        file store deletes as before (no extra scan)."""
        if self.store.lake is None:
            return True
        return bool(self.con.execute(
            f"SELECT EXISTS (SELECT 1 FROM episodes e JOIN {rows} s "
            "USING (experiment_id, trajectory_id))").fetchall()[0][0])

    def flush(self) -> Group | None:
        """Write the open group and its batch row in one transaction (None: no group was
        open); drop its staged chunks. GroupLost when the write failed (rolled back)."""
        group, con = self.group, self.con
        if group is None:
            return None
        try:
            con.execute("BEGIN TRANSACTION")
            for prep in group.preps:
                rows = prep.table
                if self._replaces and self._any_stored(rows):
                    con.execute("DELETE FROM episodes WHERE (experiment_id, trajectory_id) IN "
                                f"(SELECT (experiment_id, trajectory_id) FROM {rows})")
                con.execute(f"""INSERT INTO episodes BY NAME
                    SELECT s.* EXCLUDE (_line, _problem, _maybe_secret, _h),
                      coalesce(s.usage_model, x.llm_model) AS llm_model,
                      {sql_str(self.source)} AS source_file,
                      {int(group.batch_id)} AS ingest_batch
                    FROM {rows} s
                    LEFT JOIN (SELECT experiment_id, llm_model FROM experiments) x
                      USING (experiment_id)""")
                con.execute(f"INSERT INTO _fast_seen SELECT _h, _line FROM {rows}")
            if group.unpriced:  # the insert's join already set each row's model
                complete_batch(self.store, group.batch_id, [], self.pricing)
            con.execute(
                "INSERT INTO ingest_batches VALUES (?, now(), now(), 0, ?, 0, 0, ?)",
                [group.batch_id, group.n, [self.source]])
            con.execute("COMMIT")
        except Exception as exc:
            lost = self._lose(exc)
            interrupts.reraise(exc)  # Ctrl-C inside a query: stop, do not redo the group
            raise lost from exc
        except BaseException as exc:  # interrupted: rolled back, as a kill would leave it
            self._lose(exc)
            raise
        self.group = None
        for prep in group.preps:
            self.discard(prep)
        return group

    def _lose(self, exc: BaseException) -> GroupLost:
        group = self.group
        self._rollback()
        assert group is not None
        for prep in group.preps:
            self.discard(prep)
        return GroupLost(str(exc), [p.chunk for p in group.preps])

    def _rollback(self) -> None:
        self.group = None
        with contextlib.suppress(duckdb.Error):  # none open when BEGIN itself failed
            self.con.execute("ROLLBACK")

    def discard(self, prep: Prepared) -> None:
        """Drop the chunk's staged rows (committed, or going through the exact path)."""
        if prep.table is not None:
            self.con.execute(f"DROP TABLE IF EXISTS {prep.table}")
            prep.table = None

    def earlier_lines(self, keys: list[tuple[str, str, int]]) -> dict[tuple[str, str], int]:
        """For keys of an exact-path chunk: the first line of those an earlier chunk of
        this file already used (checked against the stored rows, so a hash collision
        cannot invent a duplicate)."""
        if not keys:
            return {}
        import pyarrow as pa

        tbl = pa.table({"experiment_id": [k[0] for k in keys],
                        "trajectory_id": [k[1] for k in keys]})
        self.con.register("_fast_keys", tbl)
        try:
            rows = self.con.execute(f"""
                SELECT k.experiment_id, k.trajectory_id, min(f.line) FROM _fast_keys k
                JOIN _fast_seen f ON {key_hash('k.')} = f.h
                JOIN episodes e ON e.experiment_id = k.experiment_id
                  AND e.trajectory_id = k.trajectory_id AND e.source_file = ?
                GROUP BY ALL""", [self.source]).fetchall()
        finally:
            self.con.unregister("_fast_keys")
        return {(r[0], r[1]): int(r[2]) for r in rows}

    def remember(self, keys: list[tuple[str, str, int]]) -> None:
        """Record the episode keys an exact-path chunk stored, with their lines."""
        if not keys:
            return
        import pyarrow as pa

        tbl = pa.table({"experiment_id": [k[0] for k in keys],
                        "trajectory_id": [k[1] for k in keys],
                        "line": [k[2] for k in keys]})
        self.con.register("_fast_keys", tbl)
        try:
            self.con.execute(f"INSERT INTO _fast_seen SELECT {key_hash()}, "
                             "line FROM _fast_keys")
            hashes = self.con.execute(f"SELECT {key_hash()} AS h FROM _fast_keys"
                                      ).fetchnumpy()["h"]
        finally:
            self.con.unregister("_fast_keys")
        self.seen.add(np.asarray(hashes, dtype=np.uint64))
