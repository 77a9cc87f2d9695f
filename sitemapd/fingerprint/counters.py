"""Counters a CMS renders anew on every request: readers' comments, views, votes.

A counter's label alone ("27 comments", "Comments (27)", "1.2k views") is template
wherever it stands, unless a paragraph says more around it; a counter in a byline's line
("Posted by Ann, 12 comments") counts without its count. A count in a sentence of the
article ("the clip had 900 views by noon") is what the article says.
"""

from __future__ import annotations

import re

from sitemapd.fingerprint.chrome import Element

# What a CMS counts anew on every request: readers' comments, replies, views, visits,
# votes, likes and shares, in the languages of the benchmark's pages (the drill counts
# them up). A number beside another word is not a counter: a price, a weight, a date,
# "7 min" to read, a show named "13 Investigates", "30 Rezepte" in a cookbook's menu.
COUNTED = (
    "comments?|replies|reply|responses?|reviews?|ratings?|views?|visits?|visitors?|hits|"
    "reads|plays|downloads|likes?|dislikes?|shares?|tweets?|pins?|votes?|diggs?|"
    "followers?|fans|subscribers?|reactions?|pingbacks?|trackbacks?|clicks?|"
    "kommentare?|antworten|antwort|aufrufe|besuche|bewertungen|ansichten|leser|klicks|"
    "commentaires?|vues|réactions|partages|comentarios?|comentários?|visitas|vistas|"
    "visualizaciones|visualizações|respuestas|respostas|votos|commenti|commento|visite|"
    "visualizzazioni|voti|risposte|reacties|reactie|weergaven|kommentarer|visninger|"
    "komentarze|komentarzy|komentarz|wyświetleń|komentářů|komentáře|komentář|"
    "hozzászólás|megtekintés|комментариев|комментария|комментарий|просмотров|просмотра|"
    "просмотр"
)
# A counter's label and nothing else: a count and what it counts ("27 comments",
# "Comments (27)", "1.2k views").
_COUNTED = f"(?:{COUNTED})"
_COUNT = r"\d[\d.,\u00a0\u202f]*[kKmM]?"
_COUNTER = re.compile(
    rf"\s*(?:\(?{_COUNT}\)?\s*{_COUNTED}|{_COUNTED}\s*[:(]?\s*{_COUNT}\)?)\s*", re.IGNORECASE
)
# A counter inside a line of a byline, and the count in it.
_COUNTED_IN = re.compile(
    rf"(?<!\w)(?:{_COUNT}\s*{_COUNTED}|{_COUNTED}\s*[:(]\s*{_COUNT})(?!\w)", re.IGNORECASE
)
_COUNT_RE = re.compile(_COUNT)
# A byline's line: so many words (and characters) at most, not ending as a sentence does.
_LINE_WORDS = 12
_LINE_CHARACTERS = 200
_DIGIT = re.compile(r"\d")
# (With the full stop, exclamation and question marks of Chinese and Japanese.)
_SENTENCE_ENDS = (".", "!", "?", "\u3002", "\uff01", "\uff1f")
# Blocks whose words around a count are a sentence's: "the clip had <b>900 views</b>".
_SENTENCES = ("p", "blockquote", "dd")


def uncounted(element: Element, text: str, root: Element) -> str:
    """Return `text`, a text node of `element` inside `root`, with the counts of its
    counters masked when it is a byline's line, not words of a sentence ("Posted by
    Ann, 12 comments"): a count a CMS renders anew on every request, inside a text that
    says more."""
    # Cheap first: asked of every text kept.
    if len(text) > _LINE_CHARACTERS or not _DIGIT.search(text) or not line(text):
        return text
    if not _COUNTED_IN.search(text):
        return text
    for block in (element, *element.iterancestors()):
        if block.tag in _SENTENCES:
            if not line(" ".join(t for t in block.itertext() if isinstance(t, str))):
                return text
            break
        if block is root:
            break
    return _COUNTED_IN.sub(lambda m: _COUNT_RE.sub("#", m.group()), text)


def line(text: str) -> bool:
    """True when `text` reads as a line of a byline: a few words, not ending as a
    sentence does."""
    return len(text.split()) <= _LINE_WORDS and not text.rstrip().endswith(_SENTENCE_ENDS)


def counter(element: Element, text: str, root: Element) -> bool:
    """True when `text`, a text node of `element` inside `root`, is a counter's label
    alone, not words of a paragraph that says more around it."""
    if not _COUNTER.fullmatch(text):
        return False
    for block in (element, *element.iterancestors()):
        if block.tag in _SENTENCES:
            said = " ".join(t for t in block.itertext() if isinstance(t, str))
            return said.split() == text.split()
        if block is root:
            break
    return True
