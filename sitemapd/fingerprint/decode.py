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
}
_KOREAN = {"cp949", "euc_kr", "johab", "iso2022_kr"}
_JAPANESE = {"euc_jp", "euc_jis_2004", "euc_jisx0213", "cp932", "shift_jis_2004", "shift_jisx0213"}
# The encodings browsers decode (the WHATWG Encoding Standard's), by Python's names, with
# the supersets `_SUPERSETS` maps to: a detector's other guesses (DOS and EBCDIC code
# pages, Tajik KOI8) are no web page's, and a single-byte one always "fits".
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
        *_KOREAN,
        *_JAPANESE,
    }
)
# Guesses read in full, at most: charset-normalizer lists dozens for a short page.
_TRIED = 6
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
_IDEOGRAPHS = re.compile("[\u4e00-\u9fff]")
_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]+")
# A symbol between two letters (`процес≥в`, box drawing amid Greek): a wrong reading's
# mark. Not punctuation real text puts there: a middle dot (Catalan, Korean), guillemets,
# a soft hyphen, an acute accent for an apostrophe, dashes and quotes, CJK and full-width
# marks.
_IN_WORD = re.compile(
    r"(?<=[^\W\d_])"
    r"[^\x00-\x7f\w\s\u00ab\u00b4\u00b7\u00bb\u2010-\u206f\u3000-\u303f\uff00-\uffef]"
    r"(?=[^\W\d_])"
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
    for a few broken bytes, as real pages have) into text someone writes: Korean that
    is mostly syllables (EUC-JP kana decode as loose Hangul letters, Chinese as hanja
    among syllables); of one-byte readings, the one with the fewest symbols inside
    words (a short Ukrainian page read as Mac Cyrillic gives `процес≥в`), not in
    capitals. Only encodings browsers decode are taken. uchardet's answer is tried
    before charset-normalizer's: on whole pages it tells Japanese from Korean and
    Chinese far more often. On short ones it reads Japanese as Big5: a Japanese reading
    full of kana wins over any other.
    """
    # Imported here, by the rare page that is not UTF-8 and does not say what it is: a
    # tenth of start-up otherwise.
    import cchardet
    from charset_normalizer import from_bytes

    sample = data[:_PRESCAN]
    guesses = [cchardet.detect(sample).get("encoding")]
    guesses.extend(match.encoding for match in from_bytes(sample))
    codecs_ = list(dict.fromkeys(c for c in map(_codec, guesses) if c in _WEB))
    readings = [
        (codec, text)
        for codec in codecs_[:_TRIED]
        if (text := _reading(data, codec)) is not None and _plausible(text, codec)
    ]
    texts = dict(readings)
    for codec in [c for c in texts if c in _JAPANESE] + ["euc_jp", "cp932"]:
        text = texts[codec] if codec in texts else _reading(data, codec)
        if text is not None and _kana_rich(text):
            return codec
    if not readings:
        return codecs_[0] if codecs_ else "cp1252"
    if not _single_byte(readings[0][0]):
        return readings[0][0]
    # Of equals, one in capitals last (KOI8-R and Windows-1251 read each other's small
    # letters as capitals), then the detectors' order (min() keeps the first).
    alike = [reading for reading in readings if _single_byte(reading[0])]
    return min(alike, key=lambda r: (_symbols_in_words(r[1]), _shouting(r[1])))[0]


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
    """False for a Korean reading that is mostly loose Hangul letters, or hanja among
    syllables, not syllables alone (Korean prose writes few hanja)."""
    if codec not in _KOREAN:
        return True
    jamo, syllables, hanja = _hangul()
    count = len(syllables.findall(text))
    return len(jamo.findall(text)) <= count // 5 and len(hanja.findall(text)) <= count // 4


def _single_byte(codec: str) -> bool:
    """True for a codec of one byte a character."""
    return codec.startswith(("cp1", "cp8", "iso8859", "koi8", "mac"))


def _symbols_in_words(text: str) -> int:
    """Return how many symbols `text` has between two letters, marks not counted (a
    Hebrew vowel point is a symbol to the pattern)."""
    return sum(not unicodedata.category(c).startswith("M") for c in _IN_WORD.findall(text))


def _shouting(text: str) -> bool:
    """True when more of the letters beyond ASCII are capitals than small letters."""
    beyond = "".join(_BEYOND_ASCII.findall(text))
    return sum(map(str.isupper, beyond)) > sum(map(str.islower, beyond))


def _kana_rich(text: str) -> bool:
    """True when `text` reads as Japanese prose: a fifth or more of its CJK characters
    are kana (no Chinese or Korean reading of other bytes gives them)."""
    kana = len(_KANA.findall(text))
    return kana >= 4 and kana * 5 >= kana + len(_IDEOGRAPHS.findall(text))


@lru_cache(maxsize=1)
def _hangul() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Return the patterns of loose Hangul letters, Hangul syllables and hanja, compiled
    when first asked: the syllables' 11,172 code points take 1.5 ms to compile, which
    only a page read as Korean needs."""
    return re.compile("[\u3131-\u318e]"), re.compile("[\uac00-\ud7a3]"), _IDEOGRAPHS


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
