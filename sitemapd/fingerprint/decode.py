"""Decode an HTML document's bytes the way browsers do before anything reads its text.

Order as in the WHATWG encoding sniffing algorithm: a byte order mark, then a charset
declared in the document (`<meta charset>`, `http-equiv` content type, an XML
declaration), then a detector. libxml2 on its own reads undeclared pages as Latin-1,
which garbles UTF-8, Shift_JIS and EUC-JP alike.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

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
# ISO-2022 escapes into a multi-byte set (JIS X 0208, KS X 1001), and any 8-bit byte.
_ISO2022 = re.compile(rb"\x1b\$[@B(]|\x1b\$\)C")
_HIGH = re.compile(rb"[\x80-\xff]")
# WHATWG decodes these legacy labels as their supersets.
_SUPERSETS = {
    "shift_jis": "cp932",
    "sjis": "cp932",
    "euc-kr": "cp949",
    "euc_kr": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "big5": "big5hkscs",
    "windows-1252": "cp1252",
}
_KOREAN = {"cp949", "euc_kr", "johab", "iso2022_kr"}
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


def decoded(data: bytes, whole: bytes | None = None) -> tuple[str, bytes | None]:
    """Return the document's text, decoded by BOM, declaration or detection in that
    order, and, when the text is exactly the UTF-8 of some bytes of `data`, those bytes.

    `whole`, the document `data` begins (its head), is what detection reads.
    Never raises: undecodable bytes become U+FFFD, as in a browser.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decoded(data[len(bom) :], encoding)
    declared = declared_encoding(data)
    if declared is not None:
        return _decoded(data, declared)
    if _ISO2022.search(data, 0, _PRESCAN) and not _HIGH.search(data, 0, _PRESCAN):
        # 7-bit ISO-2022 is valid ASCII: its escapes would be read as text.
        for encoding in ("iso2022_jp_ext", "iso2022_jp_2", "iso2022_kr"):
            if _fits(data, encoding):
                return data.decode(encoding, "replace"), None
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError:
        pass
    return data.decode(detected(data if whole is None else whole), "replace"), None


# A page's head and then its whole text are decoded, each detecting from the whole page:
# the answer for the last page is kept.
@lru_cache(maxsize=2)
def detected(data: bytes) -> str:
    """Return the codec a document without a declared charset is written in.

    Detectors guess; a guess is taken only when the whole document decodes by it (but
    for a few broken bytes, as real pages have), and Korean only when it reads as Korean
    (EUC-JP kana decode as stray Hangul letters). uchardet's answer is tried before
    charset-normalizer's: it tells Japanese from Korean and Chinese far more often.
    """
    # Imported here, by the rare page that is not UTF-8 and does not say what it is: a
    # tenth of start-up otherwise.
    import cchardet
    from charset_normalizer import from_bytes

    sample = data[:_PRESCAN]
    guesses = [cchardet.detect(sample).get("encoding")]
    guesses.extend(match.encoding for match in from_bytes(sample))
    first = None
    for guess in guesses:
        codec = _codec(guess)
        if codec is None:
            continue
        first = first or codec
        if _fits(data, codec) and _plausible(data, codec):
            return codec
    return first or "cp1252"


def _codec(label: str | None) -> str | None:
    """Return the Python codec browsers decode `label` with (WHATWG maps legacy labels
    to their supersets), or None when Python has none."""
    if not label:
        return None
    label = label.lower()
    label = _ALIASES.get(label, _SUPERSETS.get(label, label))
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _fits(data: bytes, codec: str) -> bool:
    """True when `data` decodes by `codec` with at most one broken character in 1,000."""
    try:
        text = data.decode(codec, "replace")
    except LookupError:
        return False
    return text.count("\ufffd") <= len(text) // 1000


def _plausible(data: bytes, codec: str) -> bool:
    """False for a Korean reading that is mostly loose Hangul letters, not syllables."""
    if codec not in _KOREAN:
        return True
    text = data.decode(codec, "replace")
    jamo, syllables = _hangul()
    return len(jamo.findall(text)) <= len(syllables.findall(text)) // 5


@lru_cache(maxsize=1)
def _hangul() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Return the patterns of loose Hangul letters and of Hangul syllables, compiled when
    first asked: the syllables' 11,172 code points take 1.5 ms to compile, which only a
    page read as Korean needs."""
    return re.compile("[\u3131-\u318e]"), re.compile("[\uac00-\ud7a3]")


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
