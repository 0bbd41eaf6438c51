"""Step 3 of the fast path, on the caller's thread: staged chunks into ``episodes``.

No key may be taken by an earlier chunk of the file; then, for a group of chunks that
fills whole DuckDB row groups (the chunker cuts them so, see
:data:`~evalatlas.adapters.jsonl_stream.ROW_GROUP_LINES`), delete-then-insert into
``episodes`` plus one batch row, in one transaction (the exact path's guarantee per
batch). Whole row groups go straight into the database file, compressed; fewer rows
would go to the write-ahead log first and be compressed at the next checkpoint
(measured: the commit's CPU halved at 1M episodes). A group holds ~128 MB of input, at
most ~192 MB (longer rows commit chunk by chunk). Where experiment records leave a
group a few rows short, it ends inside the next chunk (:meth:`Committer.group_ready`,
:meth:`Committer.flush`). If writing a group fails, it is rolled back and its chunks
(the rest of one that began in the group before) take the exact path.

A chunk's staged rows are an Arrow table (:attr:`~.state.Prepared.rows`), registered on
the store connection when the chunk joins the group (:meth:`Committer.view`) and
unregistered when it is written or dropped (:meth:`Committer.discard`); the insert, the
range check and ``_fast_seen`` read it in place. The insert joins ``experiments`` for
the episodes' model even when the store holds none (an episodes-only file into an empty
store): skipping the join then saved ~2.6 of ~70 ms a chunk (68.1 vs 70.7, medians of
8, ``/work/scale/arrow7/micro/m3.py``), ~0.3% of the ingest, not worth a second form.

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
from evalatlas.adapters import jsonl_stream
from evalatlas.adapters.jsonl_stream import Chunk
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

    def insert(self, prep: Prepared) -> None:
        """Add the staged episodes to the open group (opening one); :meth:`flush` writes
        the group in one transaction, which the caller does after a chunk that
        :attr:`~evalatlas.adapters.jsonl_stream.Chunk.closes` a row group, and before
        anything else writes episodes of this input. Raise NotClean (the group
        unchanged) when a key was already used by an earlier chunk.

        Why the write waits for the group's last chunk: the caller writes other batches
        on the same connection while the group is open (below; and the exact path's
        chunks), which a transaction open across them would take in. (Until arrow7 the
        staged chunks were tables of an in-memory database, which a transaction sees only
        when committed before it began; a chunk's Arrow table is registered here, on the
        committing connection, so that constraint is gone.)

        Experiment records and measurements of the group's chunks may be written (as
        their own batches) while it is open: the group's episodes are not stored yet,
        and the result is the same as in file order, because an experiment's batch
        completes the model and cost of its stored episodes
        (:func:`~evalatlas.store.costs.complete_batch`) and the group's insert joins the
        experiments stored by then. So a mixed file's groups still fill whole row
        groups (before, each such record flushed the open group: its half row group
        went through the WAL and was compressed again at the next checkpoint)."""
        assert prep.rows is not None and prep.hashes is not None
        group = self.group
        dup = self.seen.count(prep.hashes)  # this input's keys so far, the open group's too
        if dup:
            raise NotClean(f"duplicate trajectory_id with an earlier chunk: {dup}")
        self.view(prep)  # registered outside the group's transaction
        self.seen.add(prep.hashes)
        if group is None:
            group = self.group = Group()
        prep.left = prep.n
        group.preps.append(prep)
        group.n += prep.n
        group.size += prep.chunk.size
        group.unpriced = group.unpriced or prep.unpriced

    def group_ready(self, chunk: Chunk) -> bool:
        """Whether to write the open group after ``chunk``, its last chunk so far (then
        with ``whole=True``, see :meth:`flush`).

        DuckDB writes a transaction's rows straight into the file, compressed, only when
        it appends at least a row group's worth (``ROW_GROUP_LINES``: 122,877 rows went
        through the WAL, 122,880 did not, duckdb 1.5.5); fewer are compressed again at
        the next checkpoint. The chunker closes row groups by lines, so a group whose
        lines include experiment records or measurements (a mixed file) is a few rows
        short where the chunker closes it: it stays open while the next chunk, as large
        as its last, would fill it and the group's input stays under 1.5 x
        ``GROUP_BYTES``, and is written as soon as it holds a row group."""
        group = self.group
        if group is None:
            return False
        if group.n >= jsonl_stream.ROW_GROUP_LINES:
            return True
        if not chunk.closes:
            return False
        grows = 2 * group.preps[-1].n  # this chunk's rows and the next one's, about
        return not (group.n + grows >= jsonl_stream.ROW_GROUP_LINES
                    and group.size + chunk.size < jsonl_stream.GROUP_BYTES * 3 // 2)

    def out_of_range(self, prep: Prepared, ranges: dict[str, tuple[float, float]]) -> int:
        """How many staged rows have a reward outside the range their experiment declares,
        for the experiments in ``ranges`` (experiment id -> (low, high), from
        :func:`evalatlas.store.rows.declared_reward_range`). Why: the staging checks
        rewards against [0, 1] only, and the exact path quarantines a reward outside its
        experiment's declared range, so a narrower one must send the chunk there."""
        if not ranges or prep.rows is None:
            return 0
        return int(self.con.execute(
            f"SELECT count(*) FROM {self.view(prep)} s JOIN (SELECT unnest(?::VARCHAR[]) AS "
            "experiment_id, unnest(?::DOUBLE[]) AS lo, unnest(?::DOUBLE[]) AS hi) r "
            "USING (experiment_id) WHERE s.reward < r.lo OR s.reward > r.hi",
            [list(ranges), [lo for lo, _ in ranges.values()],
             [hi for _, hi in ranges.values()]]).fetchall()[0][0])

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

    def flush(self, batch_id: int, whole: bool = False) -> Group | None:
        """Write the open group's rows and a batch row in one transaction as batch
        ``batch_id``; return what was written (its finished chunks and rows; None: no
        group was open) and drop the finished chunks' staged rows. GroupLost when the
        write failed (rolled back).

        ``whole``: write only whole row groups' worth of rows, in line order, when the
        group holds more: the rest of its last chunk stays staged as the start of the
        next group. Why: a mixed file's groups are a few rows short of the chunker's
        row groups (:meth:`group_ready`), so each write would leave a partly filled row
        group behind, and DuckDB's checkpoint merges neighbouring partial row groups
        (its vacuum), compressing their rows a second time (measured: ~2.3 of 22 CPU s
        for 1M episodes of the mixed file)."""
        group, con = self.group, self.con
        if group is None:
            return None
        take = group.n
        if whole and take > jsonl_stream.ROW_GROUP_LINES:
            take -= take % jsonl_stream.ROW_GROUP_LINES
        plan: list[tuple[Prepared, int, int | None]] = []  # (chunk, rows, last line)
        try:
            con.execute("BEGIN TRANSACTION")
            left = take
            for prep in group.preps:
                if left == 0:
                    break
                k, cut = min(prep.left, left), None
                where = f"s._line > {int(prep.after)}"
                if k < prep.left:  # the group's last chunk, in part: its first k rows
                    cut = _cut(prep, k)
                    where += f" AND s._line <= {cut}"
                staged = self.view(prep)
                rows = f"(SELECT * FROM {staged} s WHERE {where})"
                if self._replaces and self._any_stored(rows):
                    con.execute("DELETE FROM episodes WHERE (experiment_id, trajectory_id) IN "
                                f"(SELECT (experiment_id, trajectory_id) FROM {rows})")
                con.execute(f"""INSERT INTO episodes BY NAME
                    SELECT s.* EXCLUDE (_line, _problem, _h),
                      coalesce(s.usage_model, x.llm_model) AS llm_model,
                      {sql_str(self.source)} AS source_file,
                      {int(batch_id)} AS ingest_batch
                    FROM {staged} s
                    LEFT JOIN (SELECT experiment_id, llm_model FROM experiments) x
                      USING (experiment_id)
                    WHERE {where}""")
                con.execute(f"INSERT INTO _fast_seen SELECT _h, _line FROM {rows}")
                plan.append((prep, k, cut))
                left -= k
            if group.unpriced:  # the insert's join already set each row's model
                complete_batch(self.store, batch_id, [], self.pricing)
            con.execute(
                "INSERT INTO ingest_batches VALUES (?, now(), now(), 0, ?, 0, 0, ?)",
                [batch_id, take, [self.source]])
            con.execute("COMMIT")
        except Exception as exc:
            lost = self._lose(exc)
            interrupts.reraise(exc)  # Ctrl-C inside a query: stop, do not redo the group
            raise lost from exc
        except BaseException as exc:  # interrupted: rolled back, as a kill would leave it
            self._lose(exc)
            raise
        done = Group(batch_id, n=take)
        for prep, k, cut in plan:
            prep.left -= k
            if cut is not None:
                prep.after = cut
            if prep.left == 0:
                done.preps.append(prep)
                self.discard(prep)
        rest = [p for p in group.preps if p.left]
        self.group = None if not rest else Group(
            preps=rest, n=sum(p.left for p in rest), size=sum(p.chunk.size for p in rest),
            unpriced=any(p.unpriced for p in rest))
        return done

    def _lose(self, exc: BaseException) -> GroupLost:
        group = self.group
        self._rollback()
        assert group is not None
        for prep in group.preps:
            self.discard(prep)
        return GroupLost(str(exc), [p.chunk if not p.after else p.chunk.after(p.after)
                                    for p in group.preps])

    def _rollback(self) -> None:
        self.group = None
        with contextlib.suppress(duckdb.Error):  # none open when BEGIN itself failed
            self.con.execute("ROLLBACK")

    def view(self, prep: Prepared) -> str:
        """The name of the chunk's staged rows on the committing connection (registered
        on first use: a view of the Arrow table, which DuckDB scans in place)."""
        assert prep.rows is not None
        if prep.view is None:
            name = f"_fast_rows_{prep.chunk.first_line}"
            self.con.register(name, prep.rows)
            prep.view = name
        return prep.view

    def discard(self, prep: Prepared) -> None:
        """Drop the chunk's staged rows (committed, or going through the exact path)."""
        if prep.view is not None:
            self.con.unregister(prep.view)
            prep.view = None
        prep.rows = None

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


def _cut(prep: Prepared, k: int) -> int:
    """The line of the ``k``-th staged row of ``prep`` after line ``prep.after``."""
    assert prep.rows is not None
    lines = np.asarray(prep.rows.column("_line"), dtype=np.int64)
    return int(np.partition(lines[lines > prep.after], k - 1)[k - 1])
