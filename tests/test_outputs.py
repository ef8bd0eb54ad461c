"""The shared output layout: settings comparison, failure counts and the bounded concurrent map."""

from __future__ import annotations

import threading
import time

import pytest

from vrforge.runners.concurrency import bounded_map
from vrforge.runners.outputs import SettingsMismatch, check_settings, failure_counts, settings_difference, text_sha256


def test_settings_difference_names_nested_keys():
    old = {"seed": 0, "inputs": {"levels": ["l1"], "prompts_sha256": "a"}, "model": {"id": "m"}}
    new = {"seed": 1, "inputs": {"levels": ["l1", "l2"], "prompts_sha256": "a"}, "model": {"id": "m"}, "extra": None}
    assert settings_difference(old, new) == ['inputs.levels: ["l1"] -> ["l1", "l2"]', "seed: 0 -> 1"]
    assert settings_difference(old, old) == []
    check_settings("out", None, new)  # a fresh folder
    with pytest.raises(SettingsMismatch, match=r"out holds outputs made with other settings \(inputs\.levels"):
        check_settings("out", old, new)


def test_text_hash_is_order_free_for_keys():
    assert text_sha256({"a": 1, "b": [1, 2]}) == text_sha256({"b": [1, 2], "a": 1}) != text_sha256({"a": 1, "b": [2, 1]})


def test_failure_counts_group_by_reason_kind():
    samples = [{"status": "ok"}, {"status": "failed", "error": "HTTP 400: too long"},
               {"status": "failed", "error": "decode: cannot identify image"}, {"status": "failed", "error": "HTTP 400: x"}]
    assert failure_counts(samples) == {"ok": 1, "failed": 3, "reasons": {"HTTP 400": 2, "decode": 1}}


def test_bounded_map_keeps_order_and_bounds_the_work_in_flight():
    started, lock = [], threading.Lock()

    def work(n: int) -> int:
        with lock:
            started.append(n)
        time.sleep(0.01)
        return n * n

    assert list(bounded_map(work, range(20), workers=3)) == [n * n for n in range(20)]
    started.clear()
    results = bounded_map(work, range(100), workers=2, in_flight=4)
    assert [next(results) for _ in range(3)] == [0, 1, 4]
    results.close()  # the consumer stops: nothing new is submitted
    time.sleep(0.1)
    assert len(started) <= 3 + 4
