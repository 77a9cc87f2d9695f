"""Access log source: parsing, following real files across rotation, crawler facts."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapd.errors import SourceError
from sitemapd.sources.accesslog import (
    DEFAULT_CRAWLERS,
    Chunk,
    Hit,
    crawl_facts,
    crawler_of,
    parse_line,
    read_new,
)

GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
BINGBOT = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
CRAWLERS = [(name, re.compile(pattern)) for name, pattern in DEFAULT_CRAWLERS.items()]
EXAMPLE = (
    b'203.0.113.9 - - [10/Oct/2026:13:55:36 -0700] "GET /feed.atom HTTP/1.1" 200 2326 "-" '
    b'"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"'
)


def line(n: int, target: str = "/page", status: int = 200, agent: str = GOOGLEBOT) -> bytes:
    """Return a combined-format line whose target and time both carry `n`."""
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(1_790_000_000 + n))
    return (
        f'198.51.100.{n % 250} - - [{stamp}] "GET {target}?n={n} HTTP/1.1" {status} 512 '
        f'"https://example.com/" "{agent}"\n'
    ).encode()


def numbers(hits: list[Hit]) -> list[int]:
    """Return the `n` each hit written by `line` carries."""
    return [int(hit.target.rpartition("=")[2]) for hit in hits]


def append(path: Path, *lines: bytes) -> None:
    with open(path, "ab") as handle:  # a server's O_APPEND writes
        handle.write(b"".join(lines))


def read_all(path: Path, cursor: str | None, max_bytes: int = 16 * 2**20) -> tuple[Chunk, str]:
    """Return one chunk holding every hit read until the log says no more, and the cursor."""
    total = Chunk([], "", 0, False)
    while True:
        chunk = read_new(path, cursor, max_bytes)
        total.hits += chunk.hits
        total.bad_lines += chunk.bad_lines
        total.rotated |= chunk.rotated
        cursor = chunk.cursor
        if not chunk.more:
            return total, cursor


# --- parsing ---------------------------------------------------------------------------


def test_parses_combined_format_into_utc() -> None:
    assert parse_line(EXAMPLE) == Hit(
        "2026-10-10T20:55:36+00:00",
        "GET",
        "/feed.atom",
        200,
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    )


@pytest.mark.parametrize(
    ("stamp", "utc"),
    [
        ("10/Oct/2026:13:55:36 +0200", "2026-10-10T11:55:36+00:00"),
        ("01/Jan/2027:01:00:00 +0200", "2026-12-31T23:00:00+00:00"),
        ("31/Dec/2026:20:30:00 -0700", "2027-01-01T03:30:00+00:00"),
        ("29/Feb/2028:00:00:00 +0530", "2028-02-28T18:30:00+00:00"),
        ("10/Oct/2026:13:55:36 +0000", "2026-10-10T13:55:36+00:00"),
    ],
)
def test_converts_the_log_time_zone_to_utc(stamp: str, utc: str) -> None:
    hit = parse_line(f'::1 - - [{stamp}] "HEAD / HTTP/1.1" 304 - "-" "x"'.encode())
    assert hit is not None
    assert hit.at == utc


def test_parses_common_format_ipv6_and_absent_sizes() -> None:
    hit = parse_line(
        b'2001:db8::7 - frank [10/Oct/2026:13:55:36 +0000] "POST /form HTTP/1.0" 201 -'
    )
    assert hit == Hit("2026-10-10T13:55:36+00:00", "POST", "/form", 201, "")


def test_unescapes_quotes_and_bytes_inside_fields() -> None:
    apache = parse_line(
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET /a?q=\\"x\\" HTTP/1.1" 200 5 '
        b'"-" "Bot \\"quoted\\" \\\\ back"'
    )
    nginx = parse_line(
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET /caf\\xC3\\xA9 HTTP/2.0" 200 5 '
        b'"-" "say \\x22hi\\x22"'
    )
    assert apache is not None
    assert apache.target == '/a?q="x"'
    assert apache.user_agent == 'Bot "quoted" \\ back'
    assert nginx is not None
    assert nginx.target == "/café"
    assert nginx.user_agent == 'say "hi"'


def test_reduces_absolute_form_and_survives_bad_utf8() -> None:
    absolute = parse_line(
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET http://Example.com/x?y=1 HTTP/1.1" '
        b'301 0 "-" "agent \xff\xfe"'
    )
    bare = parse_line(
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET https://example.com HTTP/1.1" 200 0'
    )
    assert absolute is not None
    assert absolute.target == "/x?y=1"
    assert absolute.user_agent == "agent \ufffd\ufffd"
    assert bare is not None
    assert bare.target == "/"


@pytest.mark.parametrize(
    "raw",
    [
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "\\x16\\x03\\x01\\x02\\x00" 400 157 "-" "-"',
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "\x16\x03\x01\x02\x00\x01" 400 157 "-" "-"',
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "-" 408 0 "-" "-"',
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "CONNECT example.com:443 HTTP/1.1" 405 0',
        b'192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] "GET /a b HTTP/1.1" 400 0',
        b'192.0.2.1 - - [30/Feb/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 0',
        b'192.0.2.1 - - [10/Foo/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 0',
        b'192.0.2.1 - - [10/Oct/2026:25:55:36 +0000] "GET / HTTP/1.1" 200 0',
        b'192.0.2.1 - - [10/Oct/2026:13:55:36] "GET / HTTP/1.1" 200 0',
        b"2026/10/10 13:55:36 [error] 1234#0: *1 open() failed",
        b"",
    ],
)
def test_garbage_gives_none(raw: bytes) -> None:
    assert parse_line(raw) is None


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(raw: bytes) -> None:
    parse_line(raw)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, len(EXAMPLE)), st.integers(0, 40), st.binary(max_size=40))
def test_damaged_lines_never_raise(at: int, cut: int, inserted: bytes) -> None:
    hit = parse_line(EXAMPLE[:at] + inserted + EXAMPLE[at + cut :])
    assert hit is None or isinstance(hit.status, int)


# --- crawlers and facts ----------------------------------------------------------------


def test_crawler_of_takes_the_first_match_in_order() -> None:
    assert crawler_of(GOOGLEBOT, CRAWLERS) == "googlebot"
    assert crawler_of(BINGBOT, CRAWLERS) == "bingbot"
    assert crawler_of(BROWSER, CRAWLERS) is None
    assert crawler_of("BINGBOT", CRAWLERS) is None  # patterns are case-sensitive as given
    both = [("any", re.compile("bot")), ("googlebot", re.compile("Googlebot"))]
    assert crawler_of(GOOGLEBOT, both) == "any"


def hit(at: int, target: str, status: int, agent: str, method: str = "GET") -> Hit:
    return Hit(f"2026-10-10T13:55:{at:02d}+00:00", method, target, status, agent)


def pages(*paths: str) -> Callable[[str], int | None]:
    """Return the feed page of a path: page 1 for each of `paths`, N for `-N.xml` beside."""
    numbered = {path: 1 for path in paths}
    for path in paths:
        stem = path.removesuffix(".xml")
        numbered |= {f"{stem}-{n}.xml": n for n in range(2, 5) if stem != path}
    return numbered.get


def test_feed_fetches_count_successful_crawler_gets_only() -> None:
    facts = crawl_facts(
        [
            hit(1, "/feeds/atom.xml", 200, GOOGLEBOT),
            hit(5, "/feeds/atom.xml?since=1", 304, BINGBOT),
            hit(6, "/feeds/atom.xml", 200, BINGBOT, "HEAD"),  # carries no entries
            hit(3, "/feeds/rss.xml", 200, GOOGLEBOT),  # logged late: older than the next
            hit(9, "/feeds/atom.xml", 404, GOOGLEBOT),
            hit(9, "/feeds/atom.xml", 200, BROWSER),
            hit(8, "/feeds/atom.xml", 200, BINGBOT, "POST"),
            hit(7, "/other.xml", 200, BINGBOT),
            hit(4, "/feeds/rss-3.xml", 200, BINGBOT),
        ],
        CRAWLERS,
        pages("/feeds/atom.xml", "/feeds/rss.xml"),
    )
    assert facts.feed_fetches == {
        ("googlebot", 1): "2026-10-10T13:55:03+00:00",
        ("bingbot", 1): "2026-10-10T13:55:05+00:00",
        ("bingbot", 3): "2026-10-10T13:55:04+00:00",
    }


def test_failed_feed_fetch_alone_records_nothing() -> None:
    facts = crawl_facts(
        [hit(1, "/feeds/atom.xml", 404, GOOGLEBOT)], CRAWLERS, pages("/feeds/atom.xml")
    )
    assert facts.feed_fetches == {}
    assert facts.answers == {"/feeds/atom.xml": (404, "googlebot", "2026-10-10T13:55:01+00:00")}


def test_answers_keep_the_last_crawler_status_per_target() -> None:
    facts = crawl_facts(
        [
            hit(1, "/a", 404, GOOGLEBOT),
            hit(2, "/a", 200, BINGBOT),
            hit(3, "/b", 410, BINGBOT),
            hit(4, "/b", 200, BROWSER),
            hit(5, "/c", 301, GOOGLEBOT, "HEAD"),
            hit(6, "/c", 500, GOOGLEBOT, "POST"),
            hit(7, "/d", 200, BROWSER),
        ],
        CRAWLERS,
        pages(),
    )
    assert facts.answers == {
        "/a": (200, "bingbot", "2026-10-10T13:55:02+00:00"),
        "/b": (410, "bingbot", "2026-10-10T13:55:03+00:00"),
        "/c": (301, "googlebot", "2026-10-10T13:55:05+00:00"),
    }


def test_custom_crawler_patterns() -> None:
    crawlers = [("yandex", re.compile(r"YandexBot/\d")), ("apple", re.compile("Applebot"))]
    facts = crawl_facts(
        [
            hit(1, "/feed", 200, "Mozilla/5.0 (compatible; YandexBot/3.0)"),
            hit(2, "/feed", 200, "Mozilla/5.0 (Applebot/0.1)"),
            hit(3, "/feed", 200, GOOGLEBOT),
        ],
        crawlers,
        pages("/feed"),
    )
    assert facts.feed_fetches == {
        ("yandex", 1): "2026-10-10T13:55:01+00:00",
        ("apple", 1): "2026-10-10T13:55:02+00:00",
    }
    assert facts.answers == {"/feed": (200, "apple", "2026-10-10T13:55:02+00:00")}


def test_facts_from_a_real_log(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(
        log,
        line(1, "/feeds/atom.xml", 200, BINGBOT),
        line(2, "/feeds/atom.xml", 304, GOOGLEBOT),
        line(3, "/gone", 410, GOOGLEBOT),
        line(4, "/feeds/atom.xml", 200, BROWSER),
    )
    facts = crawl_facts(read_new(log, None).hits, CRAWLERS, pages("/feeds/atom.xml"))
    assert facts.feed_fetches == {
        ("bingbot", 1): "2026-09-21T14:13:21+00:00",
        ("googlebot", 1): "2026-09-21T14:13:22+00:00",
    }
    assert facts.answers["/gone?n=3"] == (410, "googlebot", "2026-09-21T14:13:23+00:00")


# --- following the file ----------------------------------------------------------------


def test_first_read_takes_the_whole_log_then_only_appends(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1), line(2), b"not a log line\n", line(3))
    first = read_new(log, None)
    assert numbers(first.hits) == [1, 2, 3]
    assert (first.bad_lines, first.rotated, first.more) == (1, False, False)
    assert read_new(log, first.cursor).hits == []
    append(log, line(4), line(5))
    second = read_new(log, first.cursor)
    assert numbers(second.hits) == [4, 5]
    assert second.bad_lines == 0
    append(log, line(6))
    assert numbers(read_new(log, second.cursor).hits) == [6]


def test_first_read_is_capped_to_the_tail_at_a_line_start(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    lines = [line(n) for n in range(100)]
    append(log, *lines)
    size = sum(len(one) for one in lines[-10:])
    chunk = read_new(log, None, max_bytes=size + 5)  # starts 5 bytes into line 89
    assert numbers(chunk.hits) == list(range(90, 100))
    assert chunk.bad_lines == 0
    append(log, line(100))
    assert numbers(read_new(log, chunk.cursor).hits) == [100]


def test_a_partial_last_line_waits_for_its_end(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    whole = line(2)
    append(log, line(1), whole[:40])
    chunk = read_new(log, None)
    assert numbers(chunk.hits) == [1]
    again = read_new(log, chunk.cursor)
    assert again.hits == []
    append(log, whole[40:-1])
    assert read_new(log, again.cursor).hits == []
    append(log, b"\n")
    done = read_new(log, again.cursor)
    assert numbers(done.hits) == [2]
    assert done.bad_lines == 0


def test_crlf_and_blank_lines(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1)[:-1] + b"\r\n", b"\n", line(2))
    chunk = read_new(log, None)
    assert numbers(chunk.hits) == [1, 2]
    assert chunk.bad_lines == 0


def test_rename_rotation_reads_the_old_files_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1))
    cursor = read_new(log, None).cursor
    with open(log, "ab") as server:  # the server's descriptor survives the rename
        server.write(line(2))
        server.flush()
        log.rename(tmp_path / "access.log.1")
        (tmp_path / "access.log.2.gz").write_bytes(b"\x1f\x8b compressed, never read")
        (tmp_path / "other.log").write_bytes(line(99))
        log.touch()  # logrotate's `create`
        server.write(line(3))  # the server has not reopened its log yet
        server.flush()
        waiting = read_new(log, cursor)
        assert numbers(waiting.hits) == [2, 3]
        assert not waiting.rotated
        server.write(line(4))  # still writing to the old file
    append(log, line(5), line(6))  # reopened: the new file has lines
    switched = read_new(log, waiting.cursor)
    assert numbers(switched.hits) == [4, 5, 6]
    assert switched.rotated
    append(log, line(7))
    later = read_new(log, switched.cursor)
    assert numbers(later.hits) == [7]
    assert not later.rotated


def test_rename_rotation_finishes_a_half_written_old_line(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1))
    cursor = read_new(log, None).cursor
    append(log, line(2), line(3)[:30])
    log.rename(tmp_path / "access.log.1")
    append(log, line(4))
    chunk = read_new(log, cursor)
    assert numbers(chunk.hits) == [2, 4]
    assert chunk.bad_lines == 1
    assert chunk.rotated


def test_rename_rotation_with_the_old_file_gone(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1))
    cursor = read_new(log, None).cursor
    append(log, line(2))
    with open(log, "rb"):  # keeps the inode alive so the new file cannot reuse it
        log.rename(tmp_path / "access.log.1.gz")  # compressed at once: not readable as text
        append(log, line(3))
        chunk = read_new(log, cursor)
    assert numbers(chunk.hits) == [3]
    assert chunk.rotated


def test_deleted_and_recreated_log_starts_over(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1))
    cursor = read_new(log, None).cursor
    log.unlink()
    append(log, *(line(n) for n in range(2, 6)))  # the filesystem may hand out the same inode
    chunk = read_new(log, cursor)
    assert numbers(chunk.hits) == [2, 3, 4, 5]
    assert chunk.rotated


def test_copytruncate_reads_the_copy_then_the_truncated_file(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1), line(2))
    cursor = read_new(log, None).cursor
    append(log, line(3))
    shutil.copyfile(log, tmp_path / "access.log.1")
    os.truncate(log, 0)
    append(log, line(4))
    chunk = read_new(log, cursor)
    assert numbers(chunk.hits) == [3, 4]
    assert chunk.rotated
    append(log, line(5))
    assert numbers(read_new(log, chunk.cursor).hits) == [5]


def test_truncation_without_a_copy_starts_over(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1), line(2), line(3))
    cursor = read_new(log, None).cursor
    os.truncate(log, 0)
    append(log, line(4))
    chunk = read_new(log, cursor)
    assert numbers(chunk.hits) == [4]
    assert chunk.rotated


def test_truncate_and_regrow_past_the_old_offset_is_noticed(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1), line(2))
    cursor = read_new(log, None).cursor
    os.truncate(log, 0)
    append(log, *(line(n) for n in range(10, 16)))  # longer than before: only the start differs
    chunk = read_new(log, cursor)
    assert numbers(chunk.hits) == list(range(10, 16))
    assert chunk.rotated


def test_regrow_past_the_fingerprinted_head_is_noticed(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, *(line(n) for n in range(100)))  # far beyond the fingerprinted head
    cursor = read_new(log, None).cursor
    os.truncate(log, 0)
    append(log, *(line(n) for n in range(1000, 1200)))
    chunk = read_new(log, cursor)
    assert numbers(chunk.hits) == list(range(1000, 1200))
    assert chunk.rotated


def test_max_bytes_continuation_reads_everything_exactly_once(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, *(line(n) for n in range(300)))
    chunk, cursor = read_all(log, None, max_bytes=64 * 2**20)
    assert numbers(chunk.hits) == list(range(300))
    calls = 0
    append(log, *(line(n) for n in range(300, 2300)))
    seen: list[int] = []
    while True:
        part = read_new(log, cursor, max_bytes=1000)
        calls += 1
        seen += numbers(part.hits)
        cursor = part.cursor
        if not part.more:
            break
    assert seen == list(range(300, 2300))
    assert calls > 100


def test_max_bytes_continuation_across_a_rename(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(0))
    cursor = read_new(log, None).cursor
    append(log, *(line(n) for n in range(1, 200)))
    log.rename(tmp_path / "access.log.1")
    append(log, *(line(n) for n in range(200, 400)))
    chunk, cursor = read_all(log, cursor, max_bytes=777)
    assert numbers(chunk.hits) == list(range(1, 400))
    assert chunk.bad_lines == 0
    assert chunk.rotated


def test_a_line_longer_than_max_bytes_is_skipped(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1))
    cursor = read_new(log, None).cursor
    append(log, line(2, "/" + "x" * 3000), line(3))
    chunk, _ = read_all(log, cursor, max_bytes=1000)
    assert numbers(chunk.hits) == [3]
    assert chunk.bad_lines == 1


def test_a_foreign_cursor_starts_afresh(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    append(log, line(1))
    for cursor in ("", "garbage", "v1:1:2:3:0:zz", "v9:1:2:3:0:0/ab"):
        assert numbers(read_new(log, cursor).hits) == [1]


def test_missing_log_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=re.escape(str(tmp_path / "access.log"))):
        read_new(tmp_path / "access.log", None)
    with pytest.raises(SourceError, match=r"access\.log"):
        read_new(tmp_path / "nowhere" / "access.log", None)
    log = tmp_path / "access.log"
    append(log, line(1))
    cursor = read_new(log, None).cursor
    log.unlink()
    with pytest.raises(SourceError, match=r"access\.log"):
        read_new(log, cursor)


def unreadable_error(log: Path) -> str:
    """Return the SourceError message reading `log` gives, as an ordinary user if we are root."""
    if os.geteuid() != 0:
        with pytest.raises(SourceError) as raised:
            read_new(log, None)
        return str(raised.value)
    # root reads any file: a forked child drops to `nobody` to meet EACCES
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        message = b"no error"
        try:
            os.setgid(65534)
            os.setuid(65534)
            read_new(log, None)
        except SourceError as exc:
            message = str(exc).encode()
        finally:
            os.write(writer, message)
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as answer:
        message = answer.read().decode()
    os.waitpid(child, 0)
    return message


def test_unreadable_log_is_a_source_error() -> None:
    folder = Path(tempfile.mkdtemp())  # pytest's own folders are closed to other users
    try:
        folder.chmod(0o711)
        log = folder / "access.log"
        append(log, line(1))
        log.chmod(0)
        assert unreadable_error(log) == f"cannot read access log {log} (Permission denied)"
    finally:
        shutil.rmtree(folder)


@pytest.mark.slow
def test_reads_100_mb_in_one_pass(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.touch()
    cursor = read_new(log, None).cursor  # a first read would take only the last max_bytes
    # Twenty requests a second, one crawler among three: a busy site's log.
    block = b"".join(line(n // 20, agent=GOOGLEBOT if n % 3 else BROWSER) for n in range(10_000))
    with open(log, "ab") as handle:
        for _ in range(100 * 2**20 // len(block)):
            handle.write(block)
    started = time.perf_counter()
    chunk, _ = read_all(log, cursor)
    elapsed = time.perf_counter() - started
    rate = len(chunk.hits) / elapsed
    print(f"{len(chunk.hits)} lines in {elapsed:.2f} s: {rate:,.0f} lines/s")
    assert len(chunk.hits) == 100 * 2**20 // len(block) * 10_000
    assert chunk.bad_lines == 0
