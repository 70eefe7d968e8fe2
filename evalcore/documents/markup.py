"""Plain text, Markdown and HTML as a title and clean text (paragraphs separated by a blank line).

Markdown keeps its words and drops its marks (`#`, emphasis, link targets, code fences, tags); a YAML front
matter's `title:` is the title, else the first heading. HTML is read with the standard library's parser:
`<title>` (else the first heading) is the title; scripts, styles, navigation and the head are left out; block
elements end a paragraph.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\ufeff]")  # keeps \t and \n
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
_WRAPPED = re.compile(r"(?<=\S)\n(?=\S)")
_HAN_CHAR = re.compile(f"[{_HAN}]")


def clean(text: str) -> str:
    """Line breaks as \\n, control characters dropped, runs of spaces as one, at most one blank line in a row."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def unwrap(text: str) -> str:
    """Lines broken inside a paragraph joined again (as PDF text comes): with nothing between two Chinese
    characters, with a space elsewhere; blank lines still end paragraphs."""
    def joined(match: re.Match[str]) -> str:
        both_han = _HAN_CHAR.match(text, match.start() - 1) and _HAN_CHAR.match(text, match.end())
        return "" if both_han else " "

    return _WRAPPED.sub(joined, text)


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*['\"]?(.*?)['\"]?[ \t]*$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_SETEXT = re.compile(r"^ {0,3}(\S[^\n]*)\n {0,3}(?:=+|-+)[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(```|~~~).*$", re.MULTILINE)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)|\[([^\]]+)\]\[[^\]]*\]")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]+\S+.*$", re.MULTILINE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.DOTALL)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~|`+)(?=\S)(.+?)(?<=\S)\1")
_QUOTE = re.compile(r"^ {0,3}>[ \t]?", re.MULTILINE)
_RULE = re.compile(r"^ {0,3}(?:[-*_][ \t]*){3,}$", re.MULTILINE)


def markdown(text: str) -> tuple[str, str]:
    """(title, text) of a Markdown document; the title is "" when it has neither front matter title nor heading."""
    title = ""
    front = _FRONT_MATTER.match(text)
    if front:
        found = _FRONT_TITLE.search(front.group(1))
        title = found.group(1).strip() if found else ""
        text = text[front.end():]
    if not title:
        headings = [m for m in (_ATX.search(text), _SETEXT.search(text)) if m]
        if headings:
            title = _inline(min(headings, key=lambda m: m.start()).group(1)).strip()
    return clean(title), clean(_plain(text))


def _plain(text: str) -> str:
    text = _FENCE.sub("", text)
    text = _REFERENCE.sub("", text)
    text = _SETEXT.sub(lambda m: m.group(1), text)
    text = _ATX.sub(lambda m: m.group(1), text)
    text = _RULE.sub("", text)
    text = _QUOTE.sub("", text)
    return _inline(text)


def _inline(text: str) -> str:
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1) or m.group(2), text)
    text = _TAG.sub("", text)
    return _EMPHASIS.sub(lambda m: m.group(2), text)


_BLOCKS = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
                     "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
                     "li", "main", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "th", "thead",
                     "tr", "ul", "caption"})
_LEFT_OUT = frozenset({"script", "style", "noscript", "template", "svg", "nav", "head", "iframe", "object"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
                   "wbr"})


class _Page(HTMLParser):
    """Collects an HTML page's title, first heading and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.heading: list[str] = []
        self._left_out: list[str] = []  # open elements whose content is left out
        self._in: str | None = None  # "title" or a heading while its text is collected
        self._headed = False
        self._pre = 0  # open <pre> elements: their line breaks are kept

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            self.parts.append("\n" if tag in ("br", "hr") else "")
            return
        if tag == "title" and not self.title and all(open_tag == "head" for open_tag in self._left_out):
            self._in = "title"  # the page's, not an SVG's
        elif tag in _LEFT_OUT:
            self._left_out.append(tag)
        elif tag in _HEADINGS and not self._headed and not self._left_out:
            self._in = tag
        self._pre += tag == "pre"
        if tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if self._left_out and tag == self._left_out[-1]:
            self._left_out.pop()
        elif tag in _LEFT_OUT and tag in self._left_out:  # an element left open inside it
            del self._left_out[self._left_out.index(tag):]
        self._pre -= tag == "pre" and self._pre > 0
        if tag == self._in:
            self._headed = self._headed or tag in _HEADINGS
            self._in = None
        if tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in == "title":
            self.title.append(data)
            return
        if self._left_out:
            return
        if self._in is not None:
            self.heading.append(data)
        self.parts.append(data if self._pre else data.replace("\n", " "))


def html(text: str) -> tuple[str, str]:
    """(title, text) of an HTML page; the title is "" when it has neither <title> nor a heading."""
    page = _Page()
    page.feed(text)
    page.close()
    title = clean(" ".join("".join(page.title).split())) or clean(" ".join("".join(page.heading).split()))
    return title, clean("".join(page.parts))
