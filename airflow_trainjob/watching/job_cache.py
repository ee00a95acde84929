"""The shared stream's jobs, each kept as its compact observation, which the garbage collector never walks.

What is kept: :func:`~airflow_trainjob.domain.observation.observe` -- what the provider reads of a job (no
``managedFields``, no pod templates, no last-applied copy), frozen into tuples of interned strings and numbers.
Readers get an :class:`~airflow_trainjob.domain.observation.Observed`, a read-only mapping shaped like the job.

Why frozen tuples: CPython's cyclic collector runs a full collection (every tracked object of the process) once the
objects promoted to its oldest generation since the last one exceed a quarter of those it kept then. A job decoded
into dicts and lists is about nine tracked containers, so a stream caching 10,000 of them added some 90,000 objects
to every full collection, and each list of them promoted enough to set off one or two full collections of the whole
triggerer: 0.2-0.5 s of a stalled event loop each on 2 cores. A tuple of strings and numbers (and of such tuples) is
no longer tracked after the first young collection it meets, so it is never promoted; and a list's answer is read
one item at a time (:func:`list_items`: the standard library's decoder stepping through the ``items`` array), so each
decoded item is freed before the collector next looks. Reading a job makes a view (no decoding); nothing read is
kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator, Mapping
from typing import Any, Generic, TypeVar

from airflow_trainjob.domain.observation import Observed, frozen_observation

_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")

R = TypeVar("R")


class Steps(Generic[R]):
    """A step generator (:meth:`JobCache.adding_list_page`) to run to its end with a ``for`` loop, whose body is what
    runs between two steps (nothing for a synchronous caller; a pass of the event loop for the shared stream), and
    what it returned, in :attr:`result` once the loop is done.

    :param steps: a generator that yields between its steps and returns its result.
    """

    result: R

    def __init__(self, steps: Generator[None, None, R]) -> None:
        self._steps = steps

    def __iter__(self) -> Iterator[None]:
        self.result = yield from self._steps

    def run(self) -> R:
        """Every step at once; return the result."""
        for _ in self:
            pass
        return self.result


class JobCache(Mapping[str, Observed]):
    """Jobs by ``metadata.name``, each read as its observation (:class:`~airflow_trainjob.domain.observation.Observed`).

    A :class:`~collections.abc.Mapping` for readers; :meth:`put`, :meth:`discard` and :meth:`add_list_page` change it.
    """

    def __init__(self) -> None:
        self._frozen: dict[str, tuple[Any, ...]] = {}

    def __getitem__(self, name: str) -> Observed:
        return Observed(self._frozen[name])

    def __contains__(self, name: object) -> bool:
        return name in self._frozen

    def __iter__(self) -> Iterator[str]:
        return iter(self._frozen)

    def __len__(self) -> int:
        return len(self._frozen)

    def put(self, job: Mapping[str, Any]) -> None:
        """Keep ``job``'s observation as its job's latest state.

        :param job: the job, an API JSON dict (a watch event's object, a list item) or an observation.
        """
        frozen = frozen_observation(job)
        self._frozen[Observed(frozen)["metadata"]["name"]] = frozen

    def discard(self, name: str) -> None:
        """Forget job ``name`` (deleted); nothing if it is not kept.

        :param name: the job's ``metadata.name``.
        """
        self._frozen.pop(name, None)

    def add_list_page(self, text: str) -> dict[str, Any]:
        """Keep every item of one page of a list answer; return the list's ``metadata`` (``continue``,
        ``resourceVersion``).

        :param text: the answer's body: a JSON list object (``{"items": [...], "metadata": {...}, ...}``).
        :raises ValueError: the text is not a JSON object with an ``items`` array (or ``null``) of named objects.
        """
        return Steps(self.adding_list_page(text, len(text))).run()

    def adding_list_page(self, text: str, items_per_step: int) -> Generator[None, None, dict[str, Any]]:
        """:meth:`add_list_page` in steps of ``items_per_step`` items: a caller on an event loop lets it run between
        two (each job is made into its observation, about 70 us). Returns the list's ``metadata``.

        :param text: the answer's body: a JSON list object (``{"items": [...], "metadata": {...}, ...}``).
        :param items_per_step: items kept per step (count).
        :raises ValueError: the text is not a JSON object with an ``items`` array (or ``null``) of named objects.
        """
        metadata: dict[str, Any] = {}
        kept = 0
        for key, value in list_items(text):
            if key == "items":
                if not isinstance(value, dict) or not isinstance((value.get("metadata") or {}).get("name"), str):
                    raise ValueError(f"a list item that is no object with a metadata.name: {str(value)[:40]!r}")
                self.put(value)
                kept += 1
                if kept % items_per_step == 0:
                    yield
            elif key == "metadata" and isinstance(value, dict):
                metadata = value
        return metadata


def list_items(text: str) -> Iterator[tuple[str, Any]]:
    """The members of a JSON list object one by one, as ``(key, value)``, with each element of its ``items`` array
    yielded on its own as ``("items", element)``: only one element is decoded at a time.

    :param text: a JSON object.
    :raises ValueError: the text is not a JSON object, or its ``items`` is neither an array nor ``null``.
    """
    at = _skip(text, 0)
    at = _expect(text, at, "{")
    if text[at : at + 1] == "}":
        return
    while True:
        key, at = _DECODER.raw_decode(text, at)
        at = _expect(text, _skip(text, at), ":")
        if key == "items" and text[at : at + 1] == "[":
            at = _skip(text, at + 1)
            if text[at : at + 1] == "]":
                at += 1
            else:
                while True:
                    item, at = _DECODER.raw_decode(text, at)
                    yield key, item
                    at = _skip(text, at)
                    if text[at : at + 1] != ",":
                        at = _expect(text, at, "]")
                        break
                    at = _skip(text, at + 1)
        else:
            value, at = _DECODER.raw_decode(text, at)
            if key != "items":
                yield key, value
            elif value is not None:  # (``null``: an empty list, as Go encodes a nil slice)
                raise ValueError(f"a list whose items are a {type(value).__name__}, not an array")
        at = _skip(text, at)
        if text[at : at + 1] != ",":
            _expect(text, at, "}")
            return
        at = _skip(text, at + 1)


def _skip(text: str, at: int) -> int:
    return _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]  # (matches the empty string too)


def _expect(text: str, at: int, char: str) -> int:
    """The index after ``char``, which must be at ``at`` (whitespace after it skipped)."""
    if text[at : at + 1] != char:
        raise ValueError(f"expected {char!r} at character {at} of a list answer, found {text[at : at + 12]!r}")
    return _skip(text, at + 1)
