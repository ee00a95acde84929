"""What the provider reads of a job, and that much only: the observation the shared stream and the UI cache keep.

The triggerer's shared stream and the api-server's UI cache hold every job of a namespace and kind, for as long as
they run; a job as the API returns it is mostly what nothing here reads (``managedFields``, the pod templates with
their scripts and env values, kubectl's last-applied copy of the whole manifest). :func:`observe` keeps what the
readers read -- the trigger's judging and deadlines, the event it fires, the UI's jobs page and Training job tab:

- ``apiVersion``, ``kind``;
- ``metadata``: :data:`METADATA_KEYS`, every label, and the provider's own annotations (its keys' prefix: the task
  instance's identity, the held run policy, the lead log's cursor);
- ``spec``: its plain values (a TrainJob's ``suspend``, ``managedBy``, ``activeDeadlineSeconds``; a v1 kind's
  ``nprocPerNode``...), ``runPolicy`` (``suspend``, ``cleanPodPolicy``, ``ttlSecondsAfterFinished``...) and, per
  replica type of each ``*ReplicaSpecs``, ``replicas``, ``restartPolicy`` and its containers' names (which container
  speaks for a replica); a TrainJob's ``runtimeRef`` and its trainer's ``numNodes`` and ``numProcPerNode``; no pod
  template, command, env or ``runtimePatches`` otherwise;
- ``status``, each replica type's counts without the controller's label selectors.

What needs the whole object (the resumed task's verdict, masking the secrets of the pod templates) reads the job by
GET.

The observation is immutable and small: one flat tuple of the job's strings and numbers (repeated strings interned),
with the number of a shape shared by the jobs of the same structure, which CPython's collector stops tracking at
its first young collection (a tuple of untracked objects): 10,000 cached jobs add nothing to the full collections
that stall an event loop. Readers read it as the job: :class:`Observed` is a read-only :class:`~collections.abc.Mapping`
(``job["metadata"]["uid"]``, ``job.get("status")``), whose arrays read as fresh ``list`` objects (labels and
annotations as fresh dicts); ``copy.deepcopy`` (or :meth:`Observed.thaw`) gives plain JSON dicts and lists.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from airflow_trainjob.domain.own_keys import is_own_key

#: The ``metadata`` fields kept (besides ``labels`` and the provider's ``annotations``).
METADATA_KEYS = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp")
#: Of each replica type's spec: the fields kept besides its containers' names.
REPLICA_SPEC_KEYS = ("replicas", "restartPolicy")
#: The suffix of the spec's replica specs of every kind (``pytorchReplicaSpecs``, ``tfReplicaSpecs``...).
REPLICA_SPECS_SUFFIX = "ReplicaSpecs"
#: Of a TrainJob's ``spec.trainer``: the counts kept (never its image, command, args or env).
TRAINER_KEYS = ("numNodes", "numProcPerNode")


def observe(job: Mapping[str, Any]) -> Observed:
    """The observation of ``job``: what the provider reads of it (see the module's docstring), frozen.

    :param job: the job, an API JSON dict (a list's item, a watch event's object, a GET's answer) or an observation.
    """
    return job if isinstance(job, Observed) and job.is_whole else Observed(frozen_observation(job))


def frozen_observation(job: Mapping[str, Any]) -> tuple[Any, ...]:
    """The observation of ``job`` as the frozen tuple a cache keeps; :class:`Observed` reads it.

    :param job: the job, an API JSON dict (or an :class:`Observed`).
    """
    if isinstance(job, Observed) and job.is_whole:
        return job.frozen
    return _freeze(observed_fields(job))


def observed_fields(job: Mapping[str, Any]) -> dict[str, Any]:
    """What :func:`observe` keeps of ``job``, as a plain JSON dict (not frozen).

    :param job: the job, an API JSON dict.
    """
    meta = _mapping(job.get("metadata"))
    kept_meta: dict[str, Any] = {k: meta[k] for k in METADATA_KEYS if meta.get(k) is not None}
    if meta.get("labels"):
        kept_meta["labels"] = dict(_mapping(meta["labels"]))
    annotations = {k: v for k, v in _mapping(meta.get("annotations")).items() if _read_annotation(k)}
    if annotations:
        kept_meta["annotations"] = annotations
    observed: dict[str, Any] = {k: job[k] for k in ("apiVersion", "kind") if job.get(k) is not None}
    observed["metadata"] = kept_meta
    spec = _observed_spec(_mapping(job.get("spec")))
    if spec:
        observed["spec"] = spec
    if isinstance(job.get("status"), Mapping):
        observed["status"] = _observed_status(job["status"])
    return observed


def _read_annotation(key: str) -> bool:
    """The provider reads its own annotations only (never kubectl's last-applied copy, nor other systems')."""
    return is_own_key(key)


def _observed_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {k: v for k, v in spec.items() if isinstance(v, (str, int, float, bool))}
    if isinstance(spec.get("runPolicy"), Mapping):
        kept["runPolicy"] = spec["runPolicy"]
    if isinstance(spec.get("runtimeRef"), Mapping):
        kept["runtimeRef"] = spec["runtimeRef"]
    trainer = {k: v for k, v in _mapping(spec.get("trainer")).items() if k in TRAINER_KEYS}
    if trainer:
        kept["trainer"] = trainer
    for key, replica_specs in spec.items():
        if key.endswith(REPLICA_SPECS_SUFFIX) and isinstance(replica_specs, Mapping):
            kept[key] = {rtype: _observed_replica_spec(_mapping(rspec)) for rtype, rspec in replica_specs.items()}
    return kept


def _observed_replica_spec(rspec: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: rspec[k] for k in REPLICA_SPEC_KEYS if rspec.get(k) is not None}
    containers = _mapping(_mapping(rspec.get("template")).get("spec")).get("containers")
    if isinstance(containers, list):
        names = [{"name": c.get("name")} for c in containers if isinstance(c, Mapping)]
        kept["template"] = {"spec": {"containers": names}}
    return kept


def _observed_status(status: Mapping[str, Any]) -> dict[str, Any]:
    kept = dict(status)
    if isinstance(status.get("replicaStatuses"), Mapping):  # the counts; not the controller's label selectors
        kept["replicaStatuses"] = {
            rtype: {k: v for k, v in _mapping(counts).items() if isinstance(v, int)}
            for rtype, counts in status["replicaStatuses"].items()
        }
    return kept


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# --- frozen JSON ------------------------------------------------------------------------------------------------
# An observation is ONE flat tuple: ``(shape, leaf0, leaf1, ...)``, its strings, numbers, booleans and Nones in
# document order (strings interned), and ``shape`` the number of a :class:`_Shape` that says where each object's and
# array's members are among them. Jobs of the same structure (the same keys, as many conditions...) share a shape, so
# a job costs one tuple of references; and a tuple that holds no tracked object stops being tracked by the collector
# at the first young collection it meets (nested tuples would take one collection per level, promoted meanwhile).
# Labels and annotations (keys of anyone's choosing) keep their keys among the leaves, so shapes stay few.

_LEAF, _OBJECT, _ARRAY, _STRINGS = 0, 1, 2, 3
#: Keys whose objects map strings to strings with keys of anyone's choosing (their keys are leaves, not shape).
_STRING_MAPS = frozenset({"labels", "annotations"})
#: Shapes numbered at most (a job of a shape beyond them carries its shape itself, and stays tracked).
_SHAPES_MAX = 4096


class _Shape:
    """Where the members of an object or an array are among an observation's leaves.

    ``keys`` (an object's), ``children`` (each member's shape, None for a leaf), ``starts`` (each member's first
    leaf, from the object's), ``size`` (leaves in all); a string map (``_STRINGS``) has ``size`` leaves, key and value
    in turn.
    """

    __slots__ = ("children", "keys", "kind", "size", "starts")

    def __init__(self, signature: Any) -> None:
        self.kind = signature if type(signature) is int else signature[0]
        self.keys: tuple[str, ...] = ()
        self.children: tuple[_Shape | None, ...] = ()
        self.starts: tuple[int, ...] = ()
        if self.kind == _STRINGS:
            self.size = signature[1]
            return
        if self.kind == _LEAF:
            self.size = 1
            return
        if self.kind == _OBJECT:
            self.keys, signatures = signature[1], signature[2]
        else:
            signatures = signature[1]
        self.children = tuple(None if s == _LEAF else _Shape(s) for s in signatures)
        starts, at = [], 0
        for child in self.children:
            starts.append(at)
            at += 1 if child is None else child.size
        self.starts, self.size = tuple(starts), at


_shape_numbers: dict[Any, int] = {}
_shapes: list[_Shape] = []
_registering = threading.Lock()


def _flatten(value: Any, leaves: list[Any], strings: bool = False) -> Any:
    """Append ``value``'s leaves to ``leaves``; return its signature (what its shape is made from)."""
    if isinstance(value, Mapping):
        if strings and all(type(v) is str for v in value.values()):
            for k, v in value.items():
                leaves += (sys.intern(k), sys.intern(v))
            return (_STRINGS, 2 * len(value))
        keys = tuple(sys.intern(k) for k in value)
        return (_OBJECT, keys, tuple(_flatten(v, leaves, k in _STRING_MAPS) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (_ARRAY, tuple(_flatten(v, leaves) for v in value))
    leaves.append(sys.intern(value) if type(value) is str else value)
    return _LEAF


def _freeze(value: Mapping[str, Any]) -> tuple[Any, ...]:
    leaves: list[Any] = []
    signature = _flatten(value, leaves)
    number = _shape_numbers.get(signature)
    if number is None:
        with _registering:  # (two threads must not give two shapes one number)
            number = _shape_numbers.get(signature)
            if number is None:
                if len(_shapes) >= _SHAPES_MAX:
                    return (_Shape(signature), *leaves)
                _shapes.append(_Shape(signature))
                number = _shape_numbers[signature] = len(_shapes) - 1
    return (number, *leaves)


def _shape_of(frozen: tuple[Any, ...]) -> _Shape:
    """The shape of a whole observation."""
    first = frozen[0]
    return first if type(first) is _Shape else _shapes[first]


def _read(shape: _Shape | None, frozen: tuple[Any, ...], at: int) -> Any:
    """The value of ``shape`` at leaf ``at`` of ``frozen``, as readers read it: an object as an :class:`Observed`,
    an array or a string map as a new list or dict."""
    if shape is None:
        return frozen[at]
    if shape.kind == _OBJECT:
        return Observed(frozen, shape, at)
    if shape.kind == _STRINGS:
        return dict(zip(frozen[at : at + shape.size : 2], frozen[at + 1 : at + shape.size : 2], strict=True))
    return [_read(child, frozen, at + start) for child, start in zip(shape.children, shape.starts, strict=True)]


def _thaw(shape: _Shape | None, frozen: tuple[Any, ...], at: int) -> Any:
    """The value of ``shape`` at leaf ``at`` of ``frozen`` as plain JSON (dicts and lists)."""
    if shape is None:
        return frozen[at]
    if shape.kind == _OBJECT:
        return {k: _thaw(c, frozen, at + s) for k, c, s in zip(shape.keys, shape.children, shape.starts, strict=True)}
    if shape.kind == _STRINGS:
        return dict(zip(frozen[at : at + shape.size : 2], frozen[at + 1 : at + shape.size : 2], strict=True))
    return [_thaw(child, frozen, at + start) for child, start in zip(shape.children, shape.starts, strict=True)]


class Observed(Mapping[str, Any]):
    """A read-only view of an observation, or of one of its objects: a :class:`~collections.abc.Mapping` whose
    objects read as :class:`Observed` and whose arrays (and labels, annotations) read as new lists (dicts): changing
    one changes nothing kept.

    :param frozen: the observation (:func:`frozen_observation`).
    :param shape: the shape of the object read (None: the observation's own).
    :param at: the index of the object's first leaf in ``frozen``.
    """

    __slots__ = ("_at", "_frozen", "_shape")

    def __init__(self, frozen: tuple[Any, ...], shape: _Shape | None = None, at: int = 1) -> None:
        self._frozen, self._shape, self._at = frozen, shape or _shape_of(frozen), at

    @property
    def frozen(self) -> tuple[Any, ...]:
        """The observation this object is read from (what a cache keeps)."""
        return self._frozen

    @property
    def is_whole(self) -> bool:
        """This reads a whole observation (not one of its objects)."""
        return self._at == 1 and self._shape is _shape_of(self._frozen)

    def __getitem__(self, key: str) -> Any:
        shape = self._shape
        try:
            i = shape.keys.index(key)
        except ValueError:
            raise KeyError(key) from None
        return _read(shape.children[i], self._frozen, self._at + shape.starts[i])

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` (as :meth:`__getitem__` reads it), or ``default``.

        :param key: a key of the object.
        :param default: what a missing key gives.
        """
        shape = self._shape
        try:
            i = shape.keys.index(key)
        except ValueError:
            return default
        return _read(shape.children[i], self._frozen, self._at + shape.starts[i])

    def __contains__(self, key: object) -> bool:
        return key in self._shape.keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._shape.keys)

    def __len__(self) -> int:
        return len(self._shape.keys)

    def thaw(self) -> dict[str, Any]:
        """A plain JSON copy (dicts and lists), to change or to serialize."""
        thawed: dict[str, Any] = _thaw(self._shape, self._frozen, self._at)
        return thawed

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return self.thaw()

    def __copy__(self) -> Observed:
        return self  # immutable

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.thaw(),))

    def __repr__(self) -> str:
        return f"Observed({self.thaw()!r})"
