"""Generated news and docs sites in several template styles, rendered the way a CMS does.

Every render of a site changes what a CMS changes on every publish without touching an
article: the "latest" and "most read" boxes, comment counts, the render time, asset
cache-busters, nonces, CSRF tokens and whitespace between tags. A test edits articles
(`Story`) and renders again, then counts which lastmods moved.
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass, field
from pathlib import Path

STYLES = ("semantic", "divsoup", "table", "related-inside")
_TEXT = (
    "council budget river harbour school tram election museum festival storm police "
    "hospital market bridge library court station factory airport stadium minister "
    "report teachers drivers residents funding opposition mayor plans weekend crews"
)
_WORDS = tuple(_TEXT.split(" "))


@dataclass
class Story:
    """One article of the site."""

    slug: str
    headline: str
    paragraphs: list[str]
    image: str
    comments: int = 0


@dataclass
class Site:
    """A news site: its stories, newest last, and the state of its template."""

    style: str
    stories: list[Story] = field(default_factory=list)
    render: int = 0
    seed: int = 0
    # Pages of about 170 KB, as real news pages are: inline state, styles, mega menus.
    heavy: bool = False

    def add_story(self, rng: random.Random) -> Story:
        """Add a new story and return it."""
        number = len(self.stories) + 1
        words = rng.sample(_WORDS, 6)
        story = Story(
            slug=f"story-{number}",
            headline=f"{words[0].title()} {words[1]} {words[2]} after {words[3]} vote {number}",
            paragraphs=[_paragraph(rng, number, n) for n in range(rng.randint(5, 9))],
            image=f"/img/{number}.jpg",
        )
        self.stories.append(story)
        return story

    def write(self, root: Path) -> None:
        """Render every page into `root` as a CMS deploy does (new template state)."""
        self.render += 1
        rng = random.Random(self.seed * 1000 + self.render)
        for story in self.stories:
            story.comments += rng.randint(0, 3)
        for story in self.stories:
            path = root / f"{story.slug}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page(self, story, rng), encoding="utf-8")


def _paragraph(rng: random.Random, number: int, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(25, 45))]
    words[0] = words[0].title()
    return " ".join(words) + f", said source {number}-{n}."


def new_site(style: str, pages: int, seed: int = 1) -> Site:
    """Return a site of `pages` stories in template `style`."""
    rng = random.Random(seed)
    site = Site(style, seed=seed)
    for _ in range(pages):
        site.add_story(rng)
    return site


def page(site: Site, story: Story, rng: random.Random) -> str:
    """Return the HTML of `story` as `site` renders it now."""
    render = {
        "semantic": _semantic,
        "divsoup": _divsoup,
        "table": _table,
        "related-inside": _related_inside,
    }[site.style]
    text = render(site, story, rng)
    if site.heavy:
        text = text.replace("</head>", _heavy_head(rng) + "</head>", 1)
        text = text.replace("<body>", "<body>" + _mega_menu(), 1)
    # Whitespace between tags differs from render to render (minifier settings, CMS).
    gap = rng.choice(["", "\n", "\n  ", " "])
    return text.replace(">\n<", ">" + gap + "<")


def _heavy_head(rng: random.Random) -> str:
    state = ",".join(f'"k{n}":"{rng.randrange(10**12):x}{"x" * 60}"' for n in range(1300))
    rules = "".join(f".c{n}{{margin:{n % 17}px;color:#{n:06x}}}\n" for n in range(1400))
    return f"<script>window.__STATE__={{{state}}}</script>\n<style>{rules}</style>\n"


def _mega_menu() -> str:
    links = "".join(
        f'<li><a href="/section/{n}/">Section {n} of the site</a></li>' for n in range(250)
    )
    return f'<div class="megamenu"><ul>{links}</ul></div>\n'


def new_heavy_site(style: str, pages: int, seed: int = 1) -> Site:
    """Return a site whose pages are about 170 KB each."""
    site = new_site(style, pages, seed)
    site.heavy = True
    return site


def _head(site: Site, story: Story, rng: random.Random) -> str:
    build = rng.randrange(10**8)
    nonce = rng.randrange(10**12)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(story.headline)} | Daily Example</title>
<meta name="description" content="{html.escape(story.paragraphs[0][:120])}">
<meta property="og:title" content="{html.escape(story.headline)}">
<meta property="og:image" content="https://cdn.example.com{story.image}?v={build}">
<link rel="canonical" href="{story.slug}.html">
<link rel="stylesheet" href="/assets/site.css?v={build}">
<script nonce="{nonce}" src="/assets/app.js?build={build}"></script>
<script nonce="{nonce}">window.__BUILD__ = "{build}";
window.__RENDER_MS__ = {rng.randint(5, 90)};</script>
<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "NewsArticle",
"headline": "{html.escape(story.headline)}", "image": ["https://cdn.example.com{story.image}"],
"datePublished": "2026-11-01T08:00:00+00:00",
"author": {{"@type": "Person", "name": "A. Writer"}},
"interactionStatistic": {{"@type": "InteractionCounter",
"userInteractionCount": {story.comments}}}}}
</script>
<style>.x{{color:#{build % 999:03d}}}</style>
</head>
"""


def _boxes(site: Site, story: Story, rng: random.Random) -> tuple[str, str]:
    latest = "\n".join(
        f'<li><a href="/{s.slug}.html">{html.escape(s.headline)}</a></li>'
        for s in reversed(site.stories[-6:])
    )
    popular = rng.sample(site.stories, min(5, len(site.stories)))
    most = "\n".join(
        f'<li><a href="/{s.slug}.html">{html.escape(s.headline)}</a> <span>{s.comments}</span></li>'
        for s in popular
    )
    return latest, most


def _body(story: Story) -> str:
    return "\n".join(f"<p>{html.escape(p)}</p>" for p in story.paragraphs)


def _nav() -> str:
    return "\n".join(
        f'<li><a href="/{name}/">{name.title()}</a></li>'
        for name in ("news", "sport", "culture", "business", "opinion")
    )


def _semantic(site: Site, story: Story, rng: random.Random) -> str:
    latest, most = _boxes(site, story, rng)
    token = rng.randrange(10**9)
    return (
        _head(site, story, rng)
        + f"""<body>
<header><a href="/">Daily Example</a>
<nav><ul>
{_nav()}
</ul></nav></header>
<main>
<article>
<h1>{html.escape(story.headline)}</h1>
<p class="byline">By A. Writer</p>
<figure><img src="{story.image}?w=800&amp;v={token}" alt="Scene">
<figcaption>The scene</figcaption></figure>
{_body(story)}
</article>
<section class="comments"><h2>{story.comments} comments</h2>
<form action="/comment"><input type="hidden" name="csrf" value="{token}">
<textarea></textarea></form>
</section>
</main>
<aside><h2>Latest</h2><ul>
{latest}
</ul><h2>Most read</h2><ol>
{most}
</ol></aside>
<footer><p>&copy; 2026 Daily Example. Rendered in {rng.randint(5, 90)} ms.</p></footer>
</body></html>
"""
    )


def _divsoup(site: Site, story: Story, rng: random.Random) -> str:
    latest, most = _boxes(site, story, rng)
    return (
        _head(site, story, rng)
        + f"""<body>
<div id="wrap">
<div class="top"><a href="/">Daily Example</a><ul class="menu">
{_nav()}
</ul></div>
<div class="cols">
<div class="col-main">
<div class="headline">{html.escape(story.headline)}</div>
<div class="info">By A. Writer | <span class="cc">{story.comments} comments</span></div>
<div class="pic"><img src="{story.image}"></div>
<div class="txt">
{_body(story)}
</div>
<div class="box1"><b>More stories</b><ul>
{latest}
</ul></div>
</div>
<div class="col-side">
<div class="box2"><b>Most read</b><ul>
{most}
</ul></div>
<div class="box3"><b>Weather</b> {rng.randint(-5, 30)} degrees</div>
</div>
</div>
<div class="bottom">Copyright Daily Example. Page generated in {rng.randint(5, 900)} ms.</div>
</div>
</body></html>
"""
    )


def _table(site: Site, story: Story, rng: random.Random) -> str:
    latest, most = _boxes(site, story, rng)
    return (
        _head(site, story, rng)
        + f"""<body>
<table width="100%"><tr><td colspan="2"><a href="/">Daily Example</a> {_nav()}</td></tr>
<tr><td width="70%" valign="top">
<font size="5"><b>{html.escape(story.headline)}</b></font><br>
<font size="1">{story.comments} reader comments</font><br>
<img src="{story.image}">
{_body(story)}
</td><td valign="top">
<b>Latest</b><br><ul>
{latest}
</ul><b>Most read</b><br><ul>
{most}
</ul>
</td></tr>
<tr><td colspan="2"><font size="1">Generated {rng.randint(5, 900)} ms</font></td></tr>
</table>
</body></html>
"""
    )


def _related_inside(site: Site, story: Story, rng: random.Random) -> str:
    latest, most = _boxes(site, story, rng)
    return (
        _head(site, story, rng)
        + f"""<body>
<div class="site">
<article class="post">
<h1 class="post-title">{html.escape(story.headline)}</h1>
<div class="post-meta">{story.comments} comments</div>
<img src="{story.image}">
<div class="post-body">
{_body(story)}
</div>
<div class="related"><h3>Related</h3><ul>
{latest}
</ul></div>
<div class="share"><a href="https://twitter.com/share?u={story.slug}">Tweet</a>
<a href="https://facebook.com/share?u={story.slug}">Share</a></div>
</article>
<div class="widgets"><ul>
{most}
</ul></div>
</div>
</body></html>
"""
    )
