"""The shared stream's job cache: a list answer read one item at a time, each job kept as its compact observation,
which the collector never walks (issue 14: full collections set off by a list stalled the triggerer's loop; issue 25:
a compact cache)."""

from __future__ import annotations

import gc
import json

import pytest

from airflow_trainjob.watching.job_cache import JobCache, list_items


def _job(name: str, **status: object) -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [{"args": ["]", "}"]}]}}}
            }
        },
        "status": {
            "conditions": [{"type": "Running", "status": "True", "message": 'a "quoted" ] , } \u00e9'}],
            **status,
        },
    }


def _page(jobs: list[dict], **metadata: object) -> dict:
    return {"apiVersion": "kubeflow.org/v1", "items": jobs, "kind": "PyTorchJobList", "metadata": metadata}


@pytest.mark.parametrize("indent", [None, 2])
def test_a_list_answer_yields_each_item_then_its_metadata_as_json_loads_reads_them(indent):
    page = _page([_job("a"), _job("b")], resourceVersion="42", **{"continue": "token"})
    members = list(list_items(json.dumps(page, indent=indent) + "\n"))
    assert members == [
        ("apiVersion", "kubeflow.org/v1"),
        ("items", page["items"][0]),
        ("items", page["items"][1]),
        ("kind", "PyTorchJobList"),
        ("metadata", {"resourceVersion": "42", "continue": "token"}),
    ]


@pytest.mark.parametrize("items", ["[]", "null", "[ ]"])
def test_an_empty_list_answer_keeps_nothing_and_gives_its_metadata(items):
    cache = JobCache()
    metadata = cache.add_list_page('{"metadata": {"resourceVersion": "7"}, "items": ' + items + "}")
    assert metadata == {"resourceVersion": "7"} and len(cache) == 0 and "a" not in cache


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"items": {"a": 1}}',
        '{"items": [1 2]}',
        '{"items": [{"metadata": {"name": "a"}}',
        '{"a" 1}',
        "{,}",
        '{"items": [{"metadata": {}}]}',
    ],
)
def test_a_text_that_is_no_list_object_raises_value_error(text):
    with pytest.raises(ValueError):
        JobCache().add_list_page(text)


def test_jobs_read_back_as_their_observation_without_managed_fields_or_pod_templates():
    cache = JobCache()
    cache.add_list_page(json.dumps(_page([_job("a"), _job("b")], resourceVersion="1")))
    expected = _job("a")
    del expected["metadata"]["managedFields"]
    expected["spec"]["pytorchReplicaSpecs"]["Master"]["template"] = {"spec": {"containers": [{"name": None}]}}
    assert cache["a"] == expected and cache.get("a") == cache["a"]
    assert sorted(cache) == ["a", "b"] and len(cache) == 2 and cache.get("c") is None
    assert dict(cache) == {"a": cache["a"], "b": cache["b"]}


def test_a_change_replaces_the_kept_job_and_a_deletion_forgets_it():
    cache = JobCache()
    cache.put(_job("a"))
    before = cache["a"]
    cache.put(_job("a", startTime="2026-12-02T00:00:00Z"))
    assert cache["a"] != before and cache["a"]["status"]["startTime"] == "2026-12-02T00:00:00Z"
    assert "startTime" not in before["status"]  # what a reader held is the state it read
    cache.discard("a")
    cache.discard("never-kept")
    assert "a" not in cache and cache.get("a") is None and len(cache) == 0


def test_a_listed_page_adds_no_object_the_collector_tracks_per_job():
    """What made a list set off full collections: every cached job was about a dozen tracked containers, promoted to
    the oldest generation. A job is now kept as one tuple of strings and numbers, which the collector stops tracking
    at the first young collection it meets (before anything could promote it); reading the jobs keeps nothing."""
    text = json.dumps(_page([_job(f"job-{i}") for i in range(500)], resourceVersion="1"))
    cache = JobCache()
    gc.collect()
    before = len(gc.get_objects())
    cache.add_list_page(text)
    gc.collect(0)
    kept = len(gc.get_objects()) - before
    assert kept < 10, f"{kept} more tracked objects after listing 500 jobs"
    phases = [job["status"]["conditions"][0]["type"] for job in cache.values()]
    gc.collect(0)
    kept_after_reading = len(gc.get_objects()) - before
    assert phases == ["Running"] * 500 and kept_after_reading < 10, f"{kept_after_reading} after reading them"


def test_a_page_is_kept_in_steps_that_return_the_lists_metadata():
    """The stream keeps a page a few jobs per pass of the event loop (each made into its observation)."""
    cache = JobCache()
    steps = cache.adding_list_page(json.dumps(_page([_job(f"j{i}") for i in range(5)], resourceVersion="9")), 2)
    assert next(steps) is None and len(cache) == 2
    assert next(steps) is None and len(cache) == 4
    with pytest.raises(StopIteration) as done:
        next(steps)
    assert done.value.value == {"resourceVersion": "9"} and len(cache) == 5
