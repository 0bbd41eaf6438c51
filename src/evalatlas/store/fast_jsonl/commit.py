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

A chunk's staged rows are an Arrow table (:attr:`~.state.Prepared.rows`, in line
order): the rows a group writes of it (a slice) are registered on the store connection
inside the group's transaction, with their ``llm_model`` set in Arrow from the stored
experiments (:func:`_with_model`), and unregistered when it ends; the insert and
``_fast_seen`` read them in place. :meth:`Committer.discard` drops the table.

``_fast_seen`` holds a hash and line per episode key already taken by this file (the
exact path names the earlier line from it); the same hashes in sorted numpy blocks
(:mod:`.seen`) give the fast duplicate check of each chunk in O(chunk log n), where a
join against ``_fast_seen`` cost O(n) per chunk. Neither keeps every key in Python.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    import pyarrow as pa


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
        when committed before it began; a chunk's Arrow table is registered on the
        committing connection inside the group's transaction, so that constraint is
        gone.)

        Experiment records and measurements of the group's chunks may be written (as
        their own batches) while it is open: the group's episodes are not stored yet,
        and the result is the same as in file order, because an experiment's batch
        completes the model and cost of its stored episodes
        (:func:`~evalatlas.store.costs.complete_batch`) and the group's insert joins the
        experiments stored by then. So a mixed file's groups still fill whole row
        groups (before, each such record flushed the open group: its half row group
        went through the WAL and was compressed again at the next checkpoint)."""
        assert prep.rows is not None
        group = self.group
        # the staged rows' key hashes (``_h``), against this input's keys so far, the
        # open group's too
        hashes = np.asarray(prep.rows.column("_h"), dtype=np.uint64)
        dup = self.seen.count(hashes)
        if dup:
            raise NotClean(f"duplicate trajectory_id with an earlier chunk: {dup}")
        self.seen.add(hashes)
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
        name = f"_fast_range_{prep.chunk.first_line}"
        self.con.register(name, prep.rows)
        try:
            return int(self.con.execute(
                f"SELECT count(*) FROM {name} s JOIN (SELECT unnest(?::VARCHAR[]) AS "
                "experiment_id, unnest(?::DOUBLE[]) AS lo, unnest(?::DOUBLE[]) AS hi) r "
                "USING (experiment_id) WHERE s.reward < r.lo OR s.reward > r.hi",
                [list(ranges), [lo for lo, _ in ranges.values()],
                 [hi for _, hi in ranges.values()]]).fetchall()[0][0])
        finally:
            self.con.unregister(name)

    def _any_stored(self, rows: str) -> bool:
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
        plan: list[tuple[Prepared, int, pa.Table]] = []  # (chunk, rows, those rows)
        left = take
        for prep in group.preps:
            if left == 0:
                break
            k = min(prep.left, left)
            plan.append((prep, k, _part(prep, k)))
            left -= k
        names: list[str] = []
        try:
            con.execute("BEGIN TRANSACTION")
            models = self._models([part for _, _, part in plan])
            for prep, _, part in plan:
                names.append(f"_fast_rows_{prep.chunk.first_line}")
                con.register(names[-1], _with_model(part, models))
                self._insert(names[-1], batch_id)
            if group.unpriced:  # the models are set already
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
        finally:
            for name in names:  # after the transaction (ended or rolled back)
                with contextlib.suppress(duckdb.Error):
                    con.unregister(name)
        done = Group(batch_id, n=take)
        for prep, k, part in plan:
            prep.left -= k
            if prep.left:  # the rows up to the part's last line are written
                prep.after = int(part.column("_line")[-1].as_py())
            else:
                done.preps.append(prep)
                self.discard(prep)
        rest = [p for p in group.preps if p.left]
        self.group = None if not rest else Group(
            preps=rest, n=sum(p.left for p in rest), size=sum(p.chunk.size for p in rest),
            unpriced=any(p.unpriced for p in rest))
        return done

    def _models(self, parts: list[pa.Table]) -> dict[str, str]:
        """The stored model of each experiment of ``parts`` that has one."""
        import pyarrow.compute as pc

        ids = {i for p in parts for i in pc.unique(p.column("experiment_id")).to_pylist()
               if i is not None}
        return dict(self.con.execute(
            "SELECT experiment_id, llm_model FROM experiments WHERE llm_model IS NOT NULL "
            "AND list_contains(?::VARCHAR[], experiment_id)", [sorted(ids)]).fetchall())

    def _insert(self, staged: str, batch_id: int) -> None:
        """Insert the rows registered as ``staged`` as batch ``batch_id`` (replacing
        stored ones of the same keys), and their keys into ``_fast_seen``."""
        con = self.con
        if self._replaces and self._any_stored(staged):
            con.execute("DELETE FROM episodes WHERE (experiment_id, trajectory_id) IN "
                        f"(SELECT (experiment_id, trajectory_id) FROM {staged})")
        con.execute(f"""INSERT INTO episodes BY NAME
            SELECT s.* EXCLUDE (_line, _problem, _h),
              {sql_str(self.source)} AS source_file, {int(batch_id)} AS ingest_batch
            FROM {staged} s""")
        con.execute(f"INSERT INTO _fast_seen SELECT _h, _line FROM {staged}")

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

    def discard(self, prep: Prepared) -> None:
        """Drop the chunk's staged rows (committed, or going through the exact path)."""
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


def _part(prep: Prepared, k: int) -> pa.Table:
    """The next ``k`` staged rows of ``prep``, after those written before (its rows are
    in line order): a slice of its table.

    Why a slice, not a ``WHERE _line`` over the whole registered table, as over the
    staged tables before arrow7: DuckDB pushes such a filter down into the scan of the
    registered Arrow table (a pyarrow dataset scan), which materialises the rows that
    pass: the insert of a chunk cost 88-111 ms instead of ~70, the ``_fast_seen``
    insert 17-22 instead of 2 (a row group of the mixed file or of the episodes only,
    medians of 8, ``/work/scale/arrow7/micro/pmy.py``); a slice is read in place."""
    assert prep.rows is not None
    start = prep.rows.num_rows - prep.left
    return prep.rows if not start and k == prep.left else prep.rows.slice(start, k)


def _with_model(part: pa.Table, models: dict[str, str]) -> pa.Table:
    """``part`` with its ``llm_model`` column: the episode's own (``usage_model``), else
    its experiment's stored model (``models``), as the exact path sets it.

    Why not a ``LEFT JOIN experiments`` in the insert, as from the staged tables before
    arrow7: with experiments stored (a mixed file), DuckDB builds the join's hash table
    over the registered Arrow table (``EXPLAIN ANALYZE``: the Arrow scan on the build
    side), not over ``experiments``: the insert of a chunk cost 124-143 ms instead of
    83-91 from an in-memory table of the same rows (61,440 episodes, 50 experiments,
    ``/work/scale/arrow7/micro/m6.py``); this lookup costs ~1.6 ms a chunk and the
    models' query (:meth:`Committer._models`) ~1 ms a group (m7.py)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    own = part.column("usage_model")
    if not models:
        return part.append_column("llm_model", own)
    at = pc.index_in(part.column("experiment_id"),
                     value_set=pa.array(list(models), type=pa.string()))
    stored = pc.take(pa.array(list(models.values()), type=pa.string()), at)
    return part.append_column("llm_model", pc.coalesce(own, stored))
