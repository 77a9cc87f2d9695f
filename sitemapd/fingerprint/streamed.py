"""React's streamed HTML (Next.js and other servers that render React): what the server
sends after the page's shell comes in a hidden `<div id="S:n">` at the end of the body,
and an inline script puts it in place: `$RC("B:n","S:n")` where a boundary's fallback
stands, `$RS("S:n","P:n")` where a placeholder stands. Readers see it there, so the
fingerprint reads it there; a segment no script completes stays hidden, as it does in a
browser.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lxml import etree

from sitemapd.fingerprint.chrome import Element
from sitemapd.fingerprint.extract import leave_tail

# The tag a segment takes once in place, until its tag is stripped.
_PLACED = "sitemapd-streamed"


def complete(tree: Element) -> None:
    """Put each streamed segment of `tree` that a script completes where the script
    puts it, shown, its own tag gone (scripts and templates are still in `tree`)."""
    places: dict[str, str] = {}  # a segment's id: the id of the template it replaces
    for script in tree.iter("script"):
        text = script.text
        if text and "$R" in text:
            for boundary, segment, placed, placeholder in _completions().findall(text):
                places[segment or placed] = boundary or placeholder
    if not places:
        return
    wanted = {*places, *places.values()}
    found = {e.get("id"): e for e in tree.iter("div", "template") if e.get("id") in wanted}
    moved = False
    for segment_id, place_id in places.items():
        segment, place = found.get(segment_id), found.get(place_id)
        if (
            segment is None
            or place is None
            or segment.tag != "div"
            or segment.get("hidden") is None
            or any(a is segment for a in place.iterancestors())
        ):
            continue
        leave_tail(segment)
        del segment.attrib["hidden"]
        segment.tag = _PLACED
        place.addprevious(segment)
        moved = True
    if moved:
        etree.strip_tags(tree, _PLACED)


@lru_cache(maxsize=1)
def _completions() -> re.Pattern[str]:
    """Return the pattern of React's completions, a boundary's (`$RR` with its style
    sheets) and a placeholder's, compiled when first asked (0.7 M instructions at every
    start otherwise, which only a streamed page needs)."""
    return re.compile(r'\$R[CR]\("(B:\d+)","(S:\d+)"|\$RS\("(S:\d+)","(P:\d+)"')
