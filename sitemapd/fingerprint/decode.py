"""Decode an HTML document's bytes the way browsers do before anything reads its text.

Order as in the WHATWG encoding sniffing algorithm: a byte order mark, then a charset
declared in the document (`<meta charset>`, `http-equiv` content type, an XML
declaration), then a detector. libxml2 on its own reads undeclared pages as Latin-1,
which garbles UTF-8, Shift_JIS and EUC-JP alike.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from functools import cache, lru_cache

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
# What browsers decode these Python codecs' encodings as (WHATWG), by the codecs' names.
_AS_BROWSERS = {
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
    "gbk": "gb18030",
    "gb2312": "gb18030",
    "tis-620": "cp874",
}
_KOREAN = {"cp949", "euc_kr", "johab", "iso2022_kr"}
_JAPANESE = {"euc_jp", "euc_jis_2004", "euc_jisx0213", "cp932", "shift_jis_2004", "shift_jisx0213"}
# The encodings browsers decode (the WHATWG Encoding Standard's), by Python's names for
# them or for the supersets pages in them are read by (`_SUPERSETS`; EUC-JP's JIS X 0213
# readings take the NEC symbols of its row 13): a detector's other guesses (DOS and
# EBCDIC code pages, Tajik KOI8) are no web page's, and a one-byte one always "fits".
_WEB = frozenset(
    {
        "big5hkscs",
        "cp1250",
        "cp1251",
        "cp1252",
        "cp1253",
        "cp1254",
        "cp1255",
        "cp1256",
        "cp1257",
        "cp1258",
        "cp866",
        "cp874",
        "gb18030",
        "iso2022_jp",
        "iso8859-2",
        "iso8859-3",
        "iso8859-4",
        "iso8859-5",
        "iso8859-6",
        "iso8859-7",
        "iso8859-8",
        "iso8859-10",
        "iso8859-13",
        "iso8859-14",
        "iso8859-15",
        "iso8859-16",
        "koi8-r",
        "koi8-u",
        "mac-cyrillic",
        "mac-roman",
        "utf-16-be",
        "utf-16-le",
        "utf-8",
        "cp949",
        *_JAPANESE,
    }
)
# Guesses read in full, at most: charset-normalizer lists dozens for a short page.
_TRIED = 6
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
_IDEOGRAPHS = re.compile("[\u4e00-\u9fff]")
# A symbol between two letters, in a text's classes (`_classes`).
_SYMBOL_IN_WORD = re.compile(rb"(?<=[Llua])s(?=[Llua])")
_SYMBOLS = frozenset({"Sm", "Sc", "So", "Cc"})
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

    Detectors guess: uchardet's answer is tried before charset-normalizer's (on whole
    pages it tells Japanese from Korean and Chinese far more often), and only encodings
    browsers decode. A guess is taken when the whole document decodes by it (but for a
    few broken bytes, as real pages have) into text someone writes: a Korean reading
    that is mostly syllables (EUC-JP kana decode as loose Hangul letters). Two more
    checks where short pages misled uchardet: a Japanese reading full of kana wins over
    any other (it read katakana as Big5), and a one-byte reading gives way to another
    one-byte guess whose words hold fewer odd characters (a Ukrainian page read as Mac
    Cyrillic gave `процес≥в`).
    """
    # Imported here, by the rare page that is not UTF-8 and does not say what it is: a
    # tenth of start-up otherwise.
    import cchardet
    from charset_normalizer import from_bytes

    sample = data[:_PRESCAN]
    labels = [cchardet.detect(sample).get("encoding")]
    labels.extend(match.encoding for match in from_bytes(sample))
    guesses = list(dict.fromkeys(c for c in map(_codec, labels) if c in _WEB))[:_TRIED]
    for codec in [c for c in guesses if c in _JAPANESE] + ["euc_jp", "cp932"]:
        text = _reading(sample, codec)
        if text is not None and _kana_rich(text) and _reading(data, codec) is not None:
            return codec
    for at, codec in enumerate(guesses):
        text = _reading(data, codec)
        if text is None or not _plausible(text, codec):
            continue
        if not _single_byte(codec):
            return codec
        # Of those as good, the first (min() keeps it): the detectors' order.
        others = [c for c in guesses[at:] if _single_byte(c)]
        return min(others, key=lambda c: _oddities(sample, c))
    return guesses[0] if guesses else "cp1252"


def _codec(label: str | None) -> str | None:
    """Return the Python codec browsers decode `label` with (WHATWG maps legacy labels
    to their supersets), or None when Python has none."""
    if not label:
        return None
    label = label.lower()
    label = _ALIASES.get(label, _SUPERSETS.get(label, label))
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    # Detectors name codecs in Python's names too: mapped again by those.
    return _AS_BROWSERS.get(name, name)


def _reading(data: bytes, codec: str) -> str | None:
    """Return `data` decoded by `codec` when at most one character in 1,000 is broken,
    else None."""
    try:
        text = data.decode(codec, "replace")
    except LookupError:
        return None
    return text if text.count("\ufffd") <= len(text) // 1000 else None


def _fits(data: bytes, codec: str) -> bool:
    """True when `data` decodes by `codec` with at most one broken character in 1,000."""
    return _reading(data, codec) is not None


def _plausible(text: str, codec: str) -> bool:
    """False for a Korean reading that is mostly loose Hangul letters, not syllables."""
    if codec not in _KOREAN:
        return True
    jamo, syllables = _hangul()
    return len(jamo.findall(text)) <= len(syllables.findall(text)) // 5


def _single_byte(codec: str) -> bool:
    """True for a codec of one byte a character."""
    return codec.startswith(("cp1", "cp8", "iso8859", "koi8", "mac"))


def _oddities(sample: bytes, codec: str) -> int:
    """Return how many characters of `sample` read by the one-byte `codec` no word
    holds: a symbol between two letters (mathematical, currency, other: box drawing;
    not punctuation, marks or format characters, which real text has there: a Hebrew
    geresh, a Persian zero-width non-joiner), a capital right after a small letter
    (pointed Hebrew read as Cyrillic, Windows-1251 read as KOI8-R)."""
    classes = sample.translate(_classes(codec))
    return classes.count(b"lu") + len(_SYMBOL_IN_WORD.findall(classes))


@cache
def _classes(codec: str) -> bytes:
    """Return the `bytes.translate` table of each byte's class read by the one-byte
    `codec`: an ASCII letter `L` (reads alike in every guess), beyond ASCII a small
    letter `l`, a capital `u`, another letter or a mark `a`, a symbol or a control
    character `s`, anything else a space."""
    table = bytearray(b" " * 256)
    for byte, char in enumerate(bytes(range(256)).decode(codec, "replace")):
        kind = unicodedata.category(char)
        if byte < 0x80:
            table[byte] = ord("L" if char.isalpha() else " ")
        elif kind[0] in "LM":
            table[byte] = ord({"Ll": "l", "Lu": "u"}.get(kind, "a"))
        elif kind in _SYMBOLS or char == "\ufffd":
            table[byte] = ord("s")
    return bytes(table)


def _kana_rich(text: str) -> bool:
    """True when `text` reads as Japanese prose: a fifth or more of its CJK characters
    are kana (no Chinese or Korean reading of other bytes gives them)."""
    kana = len(_KANA.findall(text))
    return kana >= 4 and kana * 5 >= kana + len(_IDEOGRAPHS.findall(text))


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
