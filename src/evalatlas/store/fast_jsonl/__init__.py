"""DuckDB-native ingest of JSONL episodes, chunk by chunk (the "fast path").

Why: validating one pydantic model per line runs at ~10k records/s, while DuckDB's own
``read_json`` parses ~300k/s. For records that are provably clean, the record contract's
checks can be expressed over DuckDB's parse, so a chunk goes straight to the store.
Anything not provably clean sends that chunk (not the file) through the exact per-record
path (:mod:`evalatlas.adapters.jsonl`), which makes the decision and gives the located
error; so both paths store the same rows and quarantine the same records, by
construction. ``tests/store/test_bad_inputs.py`` runs every corpus case through both.

First, a plain file in a file store is tried whole (:mod:`.whole`): one DuckDB
statement reads and inserts every episode in one transaction, msgspec checking every
line beside it; the first line that needs a decision rolls it back, and the file is
taken chunk by chunk as follows.

Per chunk (at most 64 MB of whole lines, see :mod:`evalatlas.adapters.jsonl_stream`):

1. **Keys and JSON types** by msgspec's strict decoder (:mod:`.checker`), or, for a
   chunk it does not vouch for, by the DuckDB shape pass (:mod:`.shapes`), which names
   the offending field and picks out experiment records and measurements;
2. **one query** (at the same time as step 1, on another thread) reads the chunk with
   DuckDB's typed ``read_json`` straight into episodes rows in an Arrow table, with per
   row the first problem that needs the exact path; the few rows that may hold a
   credential are redacted in Arrow (:mod:`.prepare`, SQL from :mod:`.sql`);
3. **commit** groups of chunks that fill whole DuckDB row groups, one transaction each,
   from the chunks' Arrow tables registered on the store connection (:mod:`.commit`; a
   mixed file's group may end inside a chunk, its experiment records being written
   meanwhile as their own batches).

What is accepted is generated from the record contract (:mod:`.contract`, from
:mod:`evalatlas.records.spec`). Steps 1-2 run in preparing threads, two chunks at a time,
while the caller commits the chunk before (:mod:`.pipeline`); chunks are staged in
temporary files and Arrow tables (:mod:`.staging`); :class:`FastJsonl`
(:mod:`.run`) holds one input's state. Memory is bounded by the chunk, not the file.

Known differences, in the text of JSON columns only (the values are equal, which the
parity tests check): DuckDB writes JSON compactly (``{"n":1}`` where the exact path
writes ``{"n": 1}``), keeps duplicate keys inside ``extra`` in the text (any JSON parser
reads back the last value, as the exact path stores), and leaves ``findings``' absent
named keys out where the exact path writes them as nulls.
"""

from __future__ import annotations

from evalatlas.store.fast_jsonl.run import FastJsonl
from evalatlas.store.fast_jsonl.sql import key_hash
from evalatlas.store.fast_jsonl.staging import remove_stale_chunk_dirs
from evalatlas.store.fast_jsonl.state import GroupLost, NotClean, Prepared

FAST_PATH_MIN_BYTES = 8 * 1024 * 1024
"""Below this size the exact path is fast enough and the fast path's fixed cost is not."""

__all__ = ["FAST_PATH_MIN_BYTES", "FastJsonl", "GroupLost", "NotClean", "Prepared",
           "key_hash", "remove_stale_chunk_dirs"]
