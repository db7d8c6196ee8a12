"""Batch parsing of generation datasets: rows (``RowParser``) and tables (``BatchParser``/``parse_batch``:
Arrow, pandas, ``datasets`` and Ray Data batches). pyarrow is imported only when an Arrow batch arrives."""

from chatparse.batch.arrow import COLUMNS, BatchParser, column_types, parse_batch
from chatparse.batch.rows import Outcome, RowError, RowOptions, RowParser

__all__ = ["COLUMNS", "BatchParser", "Outcome", "RowError", "RowOptions", "RowParser", "column_types", "parse_batch"]
