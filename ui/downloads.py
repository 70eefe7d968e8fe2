"""Downloads of tables (CSV for spreadsheets) and HTML documents, built only when clicked."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
import pyarrow as pa
import streamlit as st

from evalcore.formats.csvcells import csv_text


def csv_bytes(frame: pd.DataFrame, context: Mapping[str, str] | None = None) -> bytes:
    """A table as UTF-8 CSV (with BOM, for spreadsheets) written by the engine's one CSV writer, with the
    context's columns after the table's own when given (ExportContext.csv_columns)."""
    frame = frame.assign(**(context or {}))
    cells = frame.astype(object).where(frame.notna(), None)
    return spreadsheet_bytes(csv_text([list(map(str, frame.columns)), *cells.itertuples(index=False, name=None)]))


def spreadsheet_bytes(text: str) -> bytes:
    """CSV text as a download: UTF-8 with a BOM, so that Excel shows accents and Chinese correctly."""
    return text.encode("utf-8-sig")


def table_download(frame: pd.DataFrame | pa.Table, name: str, key: str, context: Mapping[str, str] | None = None,
                   ) -> None:
    """A CSV download of a table (pandas or Arrow) as `name`.csv, with its context columns; built only when clicked."""
    st.download_button("CSV", data=lambda: csv_bytes(frame if isinstance(frame, pd.DataFrame) else frame.to_pandas(),
                                                     context),
                       file_name=f"{name}.csv", mime="text/csv", key=key, on_click="ignore")


def html_download(label: str, build: Callable[[], str], name: str, key: str, help: str | None = None) -> None:
    """A download of an HTML document as `name`.html, built only when clicked."""
    st.download_button(label, data=lambda: build().encode("utf-8"), file_name=f"{name}.html", mime="text/html",
                       key=key, on_click="ignore", help=help)
