"""The threads a build hands work to: calls run in the order given, an outcome is what the
call returned or raised, threads start only when no idle one takes a call, and closing
waits for the calls given."""

from __future__ import annotations

import threading
import time
from functools import partial

import pytest

from sitemapd.core.workers import Workers


def test_calls_run_in_order_and_give_their_results() -> None:
    ran: list[int] = []

    def note(n: int) -> int:
        ran.append(n)
        return n * n

    with Workers(1, "test-order") as workers:
        pending = [workers.submit(partial(note, n)) for n in range(50)]
        assert [p.result() for p in pending] == [n * n for n in range(50)]
    assert ran == list(range(50))


def test_what_a_call_raises_is_raised_where_its_result_is_asked_for() -> None:
    def fail() -> None:
        raise OSError(28, "No space left on device")

    with Workers(2, "test-raise") as workers:
        failed = workers.submit(fail)
        after = workers.submit(lambda: "still runs")
        with pytest.raises(OSError, match="No space left"):
            failed.result()
        assert after.result() == "still runs"


def test_at_most_count_threads_start_and_none_while_one_is_idle() -> None:
    release = threading.Event()
    names: set[str] = set()

    def held() -> None:
        names.add(threading.current_thread().name)
        release.wait(10)

    with Workers(2, "test-count") as workers:
        busy = [workers.submit(held) for _ in range(5)]
        deadline = time.monotonic() + 10
        while len(names) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        for p in busy:
            p.result()
        assert names == {"test-count-0", "test-count-1"}
    with Workers(4, "test-idle") as workers:
        for _ in range(10):  # each waited for: the one thread is idle at the next
            workers.submit(lambda: None).result()
        started = {t.name for t in threading.enumerate() if t.name.startswith("test-idle")}
        assert started == {"test-idle-0"}


def test_close_waits_for_the_calls_given_and_refuses_more() -> None:
    done: list[int] = []
    workers = Workers(1, "test-close")
    for n in range(3):
        workers.submit(partial(lambda n: (time.sleep(0.05), done.append(n)), n))
    workers.close()
    assert done == [0, 1, 2]
    assert not any(t.name.startswith("test-close") for t in threading.enumerate())
    with pytest.raises(RuntimeError):
        workers.submit(lambda: None)
