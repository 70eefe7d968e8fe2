"""Dashboard helpers shared by the pages, one module by concern; every page uses them as `ui.name`.

Pages stay thin: they read widgets, call the engine and render. Everything two pages need lives here:
`engine` (the database, manager and store of this session), `session` (sign-in, identity, the start of
every page), `messages` (the one error display, flashes, upload reports), `text` (escaping and formatting),
`widgets` (remembered widgets, polling), `cache` (engine reads cached per campaign version, datasets),
`lists` (tables whose rows are the options: campaigns, suites, targets), `progress` (running campaigns),
`links` (the selection in the URL, the link to copy), `charts`, `downloads` and `serving` (no delayed small
writes), `testsets` (generating, measuring and reviewing a test set).
Every stored string shown through Markdown (labels, captions, tooltips, alerts, progress text) goes
through escape_md; charts take it through chart_text; tables, st.text and st.code show it as it is.
A test that replaces a helper patches the module that uses it (`ui.serving`, `ui.session`, ...).
"""

from __future__ import annotations

from evalcore.compare.charts import chart_text  # the one escape of chart text
from evalcore.datasets.uploads import list_datasets, validate_upload
from evalcore.documents.requested import import_uploads
from ui.cache import aggregates, cached_lines, cached_results, open_dataset, results_at, rows_of, summary, version
from ui.charts import CHROMIUM, bars, chart, histogram, html_bytes, png_bytes, stage_bar
from ui.downloads import csv_bytes, html_download, spreadsheet_bytes, table_download
from ui.engine import db_path, manager, store, wake_jobs
from ui.links import asked, keep, link_box, number_input, open_on, view_link
from ui.lists import campaign_frame, campaign_picker, row_label, suite_frame, table_picker, target_choices
from ui.messages import flash, guard, import_report, show_error, upload_report
from ui.progress import activity, progress_text, show_progress
from ui.serving import no_delay
from ui.session import (
    CREATE_KEY,
    REFUSED,
    SESSION_COOKIE,
    SESSION_TOKEN,
    THROTTLE,
    client_address,
    identity,
    keep_deep_link,
    page,
    run_link,
    session_cookie,
    sidebar_navigation,
    sign_in_page,
    sign_out,
    signed_in,
)
from ui.testsets import is_testset, testset_form, testset_quality, testset_review
from ui.text import STATIC_ROWS, campaign_label, cells, escape_md, fmt_value, fmt_when, measure_help, short, text_table
from ui.widgets import index_of, poll, remembered, remembered_multiselect, remembered_select, select_next_run

__all__ = [
    "CHROMIUM", "CREATE_KEY", "REFUSED", "SESSION_COOKIE", "SESSION_TOKEN", "STATIC_ROWS", "THROTTLE", "activity",
    "aggregates", "asked", "bars", "cached_lines", "cached_results", "campaign_frame", "campaign_label",
    "campaign_picker", "cells", "chart", "chart_text", "client_address", "csv_bytes", "db_path", "escape_md", "flash",
    "fmt_value", "fmt_when", "guard", "histogram", "html_bytes", "html_download", "identity", "import_report",
    "import_uploads", "index_of", "is_testset", "keep", "keep_deep_link", "link_box", "list_datasets", "manager",
    "measure_help", "no_delay", "number_input", "open_dataset", "open_on", "page", "png_bytes", "poll",
    "progress_text", "remembered", "remembered_multiselect", "remembered_select", "results_at", "row_label",
    "rows_of", "run_link", "select_next_run", "session_cookie", "short", "show_error", "show_progress",
    "sidebar_navigation", "sign_in_page", "sign_out", "signed_in", "spreadsheet_bytes", "stage_bar", "store",
    "suite_frame", "summary", "table_download", "table_picker", "target_choices", "testset_form", "testset_quality",
    "testset_review", "text_table", "upload_report", "validate_upload", "version", "view_link", "wake_jobs",
]
