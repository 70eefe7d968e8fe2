"""What an exported HTML report must satisfy: nothing fetched from a network when opened; its tables as text."""

from __future__ import annotations

from html.parser import HTMLParser

# Attributes through which a browser fetches something while opening a page.
FETCHING = {"src", "href", "data", "srcset", "poster", "action"}


class _Reader(HTMLParser):
    """Collects the fetching attributes of every tag and the text of every table cell."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sources: list[str] = []
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.sources += [f"<{tag} {name}={value}>" for name, value in attrs if name in FETCHING and value]
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def read_report(text: str) -> tuple[list[str], list[list[list[str]]]]:
    """(every fetching attribute, every table as rows of cell texts) of an HTML document."""
    reader = _Reader()
    reader.feed(text)
    return reader.sources, reader.tables


def network_sources(text: str) -> list[str]:
    """The tags that would fetch over a network (http, https or protocol-relative) when the document opens."""
    sources, _ = read_report(text)
    return [s for s in sources if "=http://" in s or "=https://" in s or "=//" in s]


def table_with(text: str, header: list[str]) -> list[list[str]]:
    """The rows (header first) of the first table whose header row starts with these cells."""
    _, tables = read_report(text)
    return next(t for t in tables if t and t[0][: len(header)] == header)
