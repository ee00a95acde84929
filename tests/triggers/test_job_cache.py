"""The shared stream's job cache: a list answer read one item at a time, jobs kept as text the collector never walks,
read back as the API's JSON (issue 14: full collections set off by a list stalled the triggerer's loop)."""

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


def test_jobs_read_back_as_the_api_gave_them_without_managed_fields():
    cache = JobCache()
    cache.add_list_page(json.dumps(_page([_job("a"), _job("b")], resourceVersion="1")))
    expected = _job("a")
    del expected["metadata"]["managedFields"]
    assert cache["a"] == expected and cache.get("a") is cache["a"]  # decoded once, then kept
    assert sorted(cache) == ["a", "b"] and len(cache) == 2 and cache.get("c") is None
    assert dict(cache) == {"a": cache["a"], "b": cache["b"]}


def test_a_change_replaces_the_decoded_job_and_a_deletion_forgets_it():
    cache = JobCache()
    cache.put(_job("a"))
    before = cache["a"]
    cache.put(_job("a", startTime="2026-12-02T00:00:00Z"))
    assert cache["a"] is not before and cache["a"]["status"]["startTime"] == "2026-12-02T00:00:00Z"
    cache.discard("a")
    cache.discard("never-kept")
    assert "a" not in cache and cache.get("a") is None and len(cache) == 0


def test_a_listed_page_adds_no_object_the_collector_tracks_per_job():
    """What made a list set off full collections: every cached job was about a dozen tracked containers."""
    text = json.dumps(_page([_job(f"job-{i}") for i in range(500)], resourceVersion="1"))
    cache = JobCache()
    gc.collect()
    before = len(gc.get_objects())
    cache.add_list_page(text)
    kept = len(gc.get_objects()) - before
    decoded = JobCache()
    decoded.add_list_page(text)
    gc.collect()
    before_reading = len(gc.get_objects())
    all_read = list(decoded.values())
    tracked_when_read = len(gc.get_objects()) - before_reading
    assert len(all_read) == 500 and tracked_when_read >= 500 * 8  # what the jobs cost decoded (the old cache)
    assert kept < 10, f"{kept} more tracked objects after listing 500 jobs"
