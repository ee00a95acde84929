"""What the provider does to the triggerer's garbage collector (:mod:`airflow_trainjob.triggers.heap`): where it acts,
what it freezes, and that the setting turns it off. The stalls it removes are measured in a real triggerer by
``benchmarks/triggerer_stalls.py``."""

from __future__ import annotations

import asyncio
import gc
import sys
import types
from collections.abc import Iterator

import pytest

from airflow_trainjob.triggers import heap


@pytest.fixture(autouse=True)
def _collector_as_it_was() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.fixture
def trigger_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, heap.TRIGGER_RUNNER_MODULE, types.ModuleType(heap.TRIGGER_RUNNER_MODULE))


def test_only_the_trigger_runner_on_its_loop_counts_as_the_triggerer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, heap.TRIGGER_RUNNER_MODULE, raising=False)

    async def on_loop() -> bool:
        return heap.in_triggerer()

    assert heap.in_triggerer() is False  # a worker: no loop
    assert asyncio.run(on_loop()) is False  # the api-server: a loop, no trigger runner
    monkeypatch.setitem(sys.modules, heap.TRIGGER_RUNNER_MODULE, types.ModuleType(heap.TRIGGER_RUNNER_MODULE))
    assert heap.in_triggerer() is False  # the triggerer's supervisor, off the runner's loop
    assert asyncio.run(on_loop()) is True


def test_freezing_moves_what_the_process_holds_out_of_collections() -> None:
    gc.unfreeze()
    held: list[list[int]] = [[] for _ in range(1000)]
    assert heap.freeze_long_lived() is True
    assert gc.get_freeze_count() >= len(held)
    assert gc.get_count()[0] == 0  # nothing left young for the next collection to walk


def test_the_import_is_not_collected_and_what_it_made_is_frozen_after() -> None:
    gc.unfreeze()
    gc.enable()
    with heap.importing_quietly():
        assert not gc.isenabled()
        made: list[dict[str, int]] = [
            {} for _ in range(5000)
        ]  # more than a collection's threshold: none ran (the collector is held back)
        assert gc.get_count()[0] >= len(made)
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)


def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    gc.disable()
    with heap.importing_quietly():
        pass
    assert not gc.isenabled()


def test_the_setting_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__TRAINJOB__TRIGGERER_GC_FREEZE", "False")
    gc.unfreeze()
    gc.enable()
    assert heap.freeze_long_lived() is False
    with heap.importing_quietly():
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_the_default_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW__TRAINJOB__TRIGGERER_GC_FREEZE", raising=False)
    assert heap.enabled() is True
