"""Decode an HTML document's bytes the way browsers do before anything reads its text.

Order as in the WHATWG encoding sniffing algorithm: a byte order mark, then a charset
declared in the document (`<meta charset>`, `http-equiv` content type, an XML
declaration), then a detector. libxml2 on its own reads undeclared pages as Latin-1,
which garbles UTF-8, Shift_JIS and EUC-JP alike.
"""

from __future__ import annotations

import codecs
import re

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Browsers look for the declaration in the first 1,024 bytes; generators put large
# inline scripts and styles first, so we look at the whole <head> up to 64 KiB.
_PRESCAN = 65536
_DECLARED = re.compile(
    rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)"""
    rb"""|<\?xml\b[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)""",
    re.IGNORECASE,
)
_HEAD_END = re.compile(rb"</head\s*>|<body[\s>]", re.IGNORECASE)
# WHATWG maps these labels to windows-1252; a UTF-16 label inside an ASCII-compatible
# document cannot be right and means UTF-8.
_ALIASES = {
    "iso-8859-1": "cp1252",
    "latin-1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
    "x-sjis": "shift_jis",
    "shift-jis": "shift_jis",
}


def decoded(data: bytes) -> tuple[str, bytes | None]:
    """Return the document's text, decoded by BOM, declaration or detection in that
    order, and, when the text is exactly the UTF-8 of some bytes of `data`, those bytes.

    Never raises: undecodable bytes become U+FFFD, as in a browser.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decoded(data[len(bom) :], encoding)
    declared = declared_encoding(data)
    if declared is not None:
        return _decoded(data, declared)
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError:
        pass
    # Imported here, by the rare page that is not UTF-8 and does not say what it is: a
    # tenth of start-up otherwise.
    from charset_normalizer import from_bytes

    best = from_bytes(data[:_PRESCAN]).best()
    return data.decode(best.encoding if best is not None else "cp1252", "replace"), None


def _decoded(data: bytes, encoding: str) -> tuple[str, bytes | None]:
    if encoding == "utf-8":
        try:
            return data.decode("utf-8"), data
        except UnicodeDecodeError:
            pass
    return data.decode(encoding, "replace"), None


def declared_encoding(data: bytes) -> str | None:
    """Return the Python codec of the charset the document declares, or None."""
    # Searched in place: a copy of the prescan costs more than the search on large pages.
    end = _HEAD_END.search(data, 0, _PRESCAN)
    for match in _DECLARED.finditer(data, 0, end.start() if end else _PRESCAN):
        label = (match.group(1) or match.group(2)).decode("ascii").lower()
        label = _ALIASES.get(label, label)
        try:
            return codecs.lookup(label).name
        except LookupError:
            continue
    return None
