"""The folding of a change stream's row changes (sitemapd.changelog.rows), without a server:
the column-at-a-time paths give what the row-at-a-time ones give."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapd.changelog.rows import Folds, Row, Table, describe, fingerprint
from sitemapd.config.changelog import ChangelogSpec

COLUMNS = ("id", "slug", "status", "title", "body", "views")


def table(template: str = "/news/{slug}", printed: tuple[str, ...] = ("title", "body")) -> Table:
    spec = ChangelogSpec(
        dsn="postgresql://db/cms",
        table="public.articles",
        mode="logical",
        url_column=None,
        url_template=template,
        op_column=None,
        changed_at_column="",
        live=(("status", ("publish", "")),),
        fingerprint_columns=printed,
        meta_columns=(("title", "title"),),
    )
    return describe(spec, "public", "articles", COLUMNS, ["id"])


_VALUE = st.sampled_from([None, "", "a", "b c", "é", "x\udcff", "{}"])
_ROW = st.fixed_dictionaries(
    {
        "id": st.integers(1, 6).map(str),
        "slug": st.sampled_from([None, "", " ", "s1", "s2", "s/3", "{x}"]),
        "status": st.sampled_from(["publish", "draft", "", None]),
        "title": _VALUE,
        "body": _VALUE,
        "views": st.sampled_from(["0", "1", None]),
    }
)
# A row change: the key, what happens to it, the row after, and whether an update only
# bumps a column outside the fingerprint.
_CHANGE = st.tuples(
    st.integers(1, 5).map(str),
    st.sampled_from(["write", "write", "delete"]),
    _ROW,
    st.booleans(),
)


def transactions(ops: list[list[tuple[str, str, Row, bool]]]) -> list[list[tuple[Any, Any]]]:
    """Return `ops` as row changes (before, after), each key's `before` its last state."""
    state: dict[str, Row] = {}
    made = []
    for transaction in ops:
        changes: list[tuple[Any, Any]] = []
        for key, kind, row, bump in transaction:
            before = state.get(key)
            if kind == "delete":
                if before is not None:
                    changes.append((before, None))
                    del state[key]
                continue
            after = (
                {**before, "views": str(int(before["views"] or 0) + 1)}
                if before and bump
                else {**row, "id": key}
            )
            state[key] = after
            changes.append((before, after))
        made.append(changes)
    return made


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_CHANGE, min_size=1, max_size=8), max_size=6),
    st.sampled_from(["/news/{slug}", "/n/{slug!r:>8}/{id}", "/{slug!s:.3}{{x}}", "/n/{slug:>4}"]),
)
def test_folded_at_once_is_folded_one_by_one(
    ops: list[list[tuple[str, str, Row, bool]]], template: str
) -> None:
    """`add_all` (inserts of unmet keys kept as rows, liveness, URLs and fingerprints a
    column at a time) gives the changes of `add` one change at a time, whose rows are
    made one by one: same rows, URLs, hashes, times and problems, in the same order."""
    followed = table(template)
    whole, single = Folds(followed), Folds(followed)
    for when, changes in enumerate(transactions(ops)):
        whole.add_all(changes, float(when))
        for before, after in changes:
            single.add(before, after, float(when))
    assert len(whole) == len(single)
    assert list(whole.changes()) == list(single.changes())


@settings(max_examples=200, deadline=None)
@given(st.lists(_ROW, max_size=20), st.lists(st.booleans(), min_size=20, max_size=20))
def test_rows_made_a_column_at_a_time_are_those_made_one_by_one(
    rows: list[dict[str, Any]], deleted: list[bool]
) -> None:
    """A read's hashes are each row's `fingerprint`, its URLs the template's, and whether
    a row is a page `is_live`'s verdict."""
    followed = table(printed=("title", "body", "views"))
    gone = deleted[: len(rows)]
    made = followed.by_row(rows, gone, [1.0] * len(rows))
    assert followed.live_rows(rows) == [followed.is_live(row) for row in rows]
    expected = [
        None if g else fingerprint(row, followed.fingerprint)
        for row, g in zip(rows, gone, strict=True)
    ]
    assert made.content_hashes == expected
    for row, made_row in zip(rows, made, strict=True):
        if row["slug"] is None:
            assert made_row.problem
        else:
            assert (made_row.url, made_row.problem) == (f"/news/{row['slug']}".strip(), None)
