"""WordPress's permalinks: the URL WordPress gives a post, a page, the home page and a
category or tag archive, from the site's options (WP_Rewrite's rules as WordPress 6
applies them: get_permalink, _get_page_link, get_term_link, home_url)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import NamedTuple

# The wp_options rows a site's links depend on.
OPTIONS = (
    "home",
    "permalink_structure",
    "category_base",
    "tag_base",
    "show_on_front",
    "page_on_front",
    "default_category",
    "WPLANG",
)
_TAGS = re.compile(r"%[a-z_]+%")
_DATE_TAGS = {"%year%": 0, "%monthnum%": 1, "%day%": 2, "%hour%": 3, "%minute%": 4, "%second%": 5}
# A slug WordPress gives a post as it trashes it (wp_add_trashed_suffix_to_post_name_for_post).
TRASHED = "__trashed"


class Post(NamedTuple):
    """The columns of a wp_posts row that its permalink is made of."""

    id: int
    type: str
    parent: int
    author: int
    date: str  # post_date, the site's local time: 'YYYY-MM-DD HH:MM:SS'
    name: str

    def untrashed(self) -> Post:
        """Return the post with the slug it had before it was trashed."""
        return self._replace(name=self.name.removesuffix(TRASHED))


@dataclass(frozen=True, slots=True)
class Links:
    """A site's permalink settings, as its wp_options hold them."""

    home: str
    structure: str
    category_base: str = ""
    tag_base: str = ""
    show_on_front: str = "posts"
    page_on_front: int = 0
    default_category: int = 1
    locale: str = ""

    @classmethod
    def of(cls, options: Mapping[str, str]) -> Links:
        """Return the settings of `options` (option_name: option_value)."""

        def number(name: str, default: int) -> int:
            value = options.get(name, "")
            return int(value) if value.strip().isdigit() else default

        return cls(
            home=options.get("home", "").rstrip("/"),
            structure=options.get("permalink_structure", "").strip(),
            category_base=options.get("category_base", "").strip("/"),
            tag_base=options.get("tag_base", "").strip("/"),
            show_on_front=options.get("show_on_front", "posts") or "posts",
            page_on_front=number("page_on_front", 0),
            default_category=number("default_category", 1),
            locale=options.get("WPLANG", ""),
        )

    def signature(self) -> str:
        """Return a digest of every setting: it differs when any link may."""
        text = "\0".join(str(getattr(self, field.name)) for field in fields(self))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def language(self) -> str:
        """Return the site's language as a news sitemap names it ('en' for no WPLANG)."""
        language, _, region = (self.locale or "en_US").partition("_")
        # Google News names Chinese by script region, every other language by its code.
        return f"zh-{region.lower()}" if language == "zh" and region else language.lower()

    @property
    def front(self) -> str:
        """Return the structure's static start ('/', '/index.php/', '/archives/')."""
        return self.structure[: self.structure.find("%")] if "%" in self.structure else "/"

    @property
    def _root(self) -> str:
        # PATHINFO links ('/index.php/%postname%/') keep index.php before every path.
        return "index.php/" if self.structure.startswith("/index.php") else ""

    def url(self, path: str) -> str:
        """Return home_url(path): `path` on the site's home."""
        return f"{self.home}/{path.lstrip('/')}"

    def home_page(self) -> str:
        """Return the home page's URL, home_url('/')."""
        return self.url("/")

    def _slashed(self, link: str) -> str:
        """Return user_trailingslashit(link): a slash ends it when one ends the structure."""
        return link.rstrip("/") + "/" if self.structure.endswith("/") else link.rstrip("/")

    def post(self, post: Post, category: str, author: str) -> str:
        """Return a post's permalink; `category` is its first category's path
        ('parent/child'), `author` its author's user_nicename."""
        if not self.structure:
            return self.url(f"/?p={post.id}")
        date = [*re.split(r"[- :]", post.date), "", "", "", "", "", ""][:6]
        values = {
            "%postname%": post.name,
            "%post_id%": str(post.id),
            "%category%": category,
            "%author%": author,
            **{tag: date[at] for tag, at in _DATE_TAGS.items()},
        }
        link = _TAGS.sub(lambda match: values.get(match.group(), match.group()), self.structure)
        return self._slashed(self.url(link))

    def page(self, post: Post, path: str) -> str:
        """Return a page's permalink; `path` is its slug under its ancestors' ('a/b/c')."""
        if self.show_on_front == "page" and post.id == self.page_on_front:
            return self.home_page()
        if not self.structure:
            return self.url(f"/?page_id={post.id}")
        return self._slashed(self.url(f"/{self._root}{path}"))

    def term(self, taxonomy: str, term_id: int, path: str) -> str:
        """Return a category's or tag's archive URL; `path` is its slug under its
        ancestors' (categories) or its slug (tags)."""
        if not self.structure:
            query = f"cat={term_id}" if taxonomy == "category" else f"tag={path}"
            return self.url(f"/?{query}")
        base = self.category_base if taxonomy == "category" else self.tag_base
        default = "category" if taxonomy == "category" else "tag"
        return self._slashed(self.url(f"{self.front}{base or default}/{path}"))
