"""Integer columns read from Arrow's buffers equal pyarrow's own conversion."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from evalatlas.store.fast_jsonl.arrays import int_column


def test_int_column_equals_pyarrow_conversion_across_chunks_and_slices() -> None:
    import pyarrow as pa

    tbl = duckdb.sql("SELECT range::BIGINT AS a, hash(range) AS h FROM range(5000)"
                     ).to_arrow_table()
    two = pa.concat_tables([tbl.slice(7, 100), tbl.slice(2000, 300)])  # offsets, 2 chunks
    for t in (tbl, two, tbl.slice(4999)):
        got = int_column(t.column("a"), np.int64)
        assert got.dtype == np.int64
        assert got.tolist() == t.column("a").to_pylist()
        assert int_column(t.column("h"), np.uint64).tolist() == t.column("h").to_pylist()


def test_int_column_refuses_nulls_and_other_widths() -> None:
    tbl = duckdb.sql("SELECT NULLIF(range, 3)::BIGINT AS a, range::INTEGER AS i "
                     "FROM range(5)").to_arrow_table()
    with pytest.raises(ValueError, match="nulls"):
        int_column(tbl.column("a"), np.int64)
    with pytest.raises(ValueError, match="int32"):
        int_column(tbl.column("i"), np.int64)
