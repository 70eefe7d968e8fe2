"""Documents: a folder of Markdown, text, HTML, PDF and Word files imported as a dataset's corpus (no questions
yet), with a report of what was read and what was skipped, and why."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.documents.folders import Limits, import_roots, requested_folder
    from evalcore.documents.import_report import DocumentRead, ImportReport, Kind, Skipped
    from evalcore.documents.importing import import_corpus
    from evalcore.documents.passages import Chunking
    from evalcore.documents.requested import import_folder, import_uploads

__all__ = ["Chunking", "DocumentRead", "ImportReport", "Kind", "Limits", "Skipped", "import_corpus", "import_folder",
           "import_roots", "import_uploads", "requested_folder"]
# Imported on first use: naming a record does not load pyarrow, pypdf or the chunking.
__getattr__ = lazy_exports(__name__, {
    "folders": ("Limits", "import_roots", "requested_folder"),
    "importing": ("import_corpus",),
    "passages": ("Chunking",),
    "import_report": ("DocumentRead", "ImportReport", "Kind", "Skipped"),
    "requested": ("import_folder", "import_uploads"),
})
