"""Google News languages: the code a news sitemap gives for a page's BCP 47 language tag.

Apart from the news renderer, so that reading a page's article data (sources/content.py)
does not load the renderer and the sitemap module under it.
"""

from __future__ import annotations

import functools
import re

_SUBTAG = re.compile(r"[a-z0-9]{1,8}\Z")
_PRIMARY = re.compile(r"[a-z]{2,3}\Z")
# ISO 639 codes that name no language: undetermined, multiple, none, uncoded.
_NOT_A_LANGUAGE = {"und", "mul", "zxx", "mis"}
# Regions, and Cantonese (`yue`, `zh-yue`), mostly written in Traditional characters.
_TRADITIONAL = {"tw", "hk", "mo", "yue"}
# ISO 639-3 languages of the Chinese macrolanguage.
_CHINESE = {"cmn", "yue", "wuu", "hak", "nan", "gan", "hsn", "cdo", "cjy", "cpx", "czh", "czo"}


# Pages of a site share a handful of languages: each tag is worked out once.
@functools.lru_cache(maxsize=1024)
def news_language(tag: str | None) -> str | None:
    """Return the Google News language for a BCP 47 `tag` (`en`, `zh-cn`, `zh-tw`), or None."""
    if tag is None:
        return None
    primary, *subtags = tag.strip().lower().replace("_", "-").split("-")
    if not _PRIMARY.match(primary) or primary in _NOT_A_LANGUAGE:
        return None
    if not all(_SUBTAG.match(subtag) for subtag in subtags):
        return None
    if primary in _CHINESE:
        # Mandarin, Cantonese, ... (ISO 639-3) are Chinese to Google News.
        subtags.append(primary)
        primary = "zh"
    if primary != "zh":
        return primary
    # Google knows only Simplified (zh-cn) and Traditional (zh-tw) Chinese; a script
    # subtag says which outright, a region or language only implies it.
    if "hans" in subtags:
        return "zh-cn"
    if "hant" in subtags or _TRADITIONAL.intersection(subtags):
        return "zh-tw"
    return "zh-cn"
