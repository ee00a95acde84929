"""What a trigger's pod watch keeps of its job's pods (:mod:`airflow_trainjob.domain.failed_pods`, pure) and how the
verdict reads it with the pods listed at the failure (:func:`airflow_trainjob.domain.pods.with_pods_seen`): the
failed replicas are named though the controller deleted their pods before the trigger listed them."""

from __future__ import annotations

from typing import Any

from airflow_trainjob.constants import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from airflow_trainjob.domain.failed_pods import FAILED_PODS_KEPT, FailedPodsSeen, owner_of
from airflow_trainjob.domain.pods import vanished_unseen, with_pods_seen
from airflow_trainjob.domain.verdict import judge_failure
from airflow_trainjob.families import family_of

FAMILY = family_of("PyTorchJob")


def of(uid: str, name: str = "train") -> dict[str, Any]:
    """The job object ``uid`` of that name, as :meth:`FailedPodsSeen.pods_of` reads it."""
    return {"kind": "PyTorchJob", "metadata": {"name": name, "uid": uid}}


def pod(
    replica: str,
    *,
    job: str = "train",
    uid: str = "u-1",
    kind: str = "PyTorchJob",
    running_after: int | None = None,
    exit_code: int | None = 1,
    index: int = 0,
) -> dict[str, Any]:
    """A pod of ``job``: its container ended with ``exit_code`` (None: still running, never ended); with
    ``running_after``, restarted in place (``OnFailure``) and running, that end in ``lastState``."""
    ended = {"terminated": {"exitCode": exit_code, "reason": "Error", "finishedAt": "2026-12-07T09:00:03Z"}}
    container: dict[str, Any]
    if exit_code is None:
        container = {"name": "pytorch", "state": {"running": {}}}
    elif running_after is not None:
        container = {"name": "pytorch", "restartCount": running_after, "state": {"running": {}}, "lastState": ended}
    else:
        container = {"name": "pytorch", "state": ended}
    return {
        "metadata": {
            "name": f"{job}-{replica.lower()}-{index}",
            "uid": f"pod-{job}-{replica}-{index}",
            "labels": {LABEL_JOB_NAME: job, LABEL_REPLICA_TYPE: replica.lower(), LABEL_REPLICA_INDEX: str(index)},
            "ownerReferences": [{"kind": kind, "name": job, "uid": uid, "controller": True}],
        },
        "spec": {"containers": [{"name": "pytorch", "command": ["python", "-c", "SECRET SCRIPT"]}]},
        "status": {
            "phase": "Running" if exit_code is None or running_after else "Failed",
            "containerStatuses": [container],
        },
    }


def failed_job(name: str = "train", uid: str = "u-1") -> dict[str, Any]:
    reached = f"PyTorchJob {name} has failed because it has reached the specified backoff limit"
    return {
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "ml", "uid": uid},
        "spec": {
            "pytorchReplicaSpecs": {
                t: {"restartPolicy": "OnFailure", "template": {"spec": {"containers": [{"name": "pytorch"}]}}}
                for t in ("Master", "Worker")
            }
        },
        "status": {
            "conditions": [
                {"type": "Failed", "status": "True", "message": reached, "lastTransitionTime": "2026-12-07T09:00:04Z"}
            ]
        },
    }


def test_the_failed_runs_of_a_followed_job_are_kept_trimmed_and_restarted_runs_count():
    seen = FailedPodsSeen(FAMILY)
    seen.follow("train")
    assert seen.saw(pod("Master", running_after=1)) and seen.saw(pod("Worker"))
    kept = seen.pods_of("train", of("u-1"))
    assert [p["metadata"]["name"] for p in kept] == ["train-master-0", "train-worker-0"]
    assert "SECRET SCRIPT" not in repr(kept)  # trimmed as a record keeps a pod: no container spec
    assert kept[0]["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1


def test_nothing_is_kept_of_a_job_no_wait_follows_nor_of_pods_without_a_failed_run():
    seen = FailedPodsSeen(FAMILY)
    seen.follow("train")
    assert not seen.saw(pod("Master", job="other", uid="u-2"))  # nobody follows "other"
    assert not seen.saw(pod("Master", exit_code=None))  # running, never ended
    assert not seen.saw(pod("Master", exit_code=0))  # succeeded
    assert not seen.saw(pod("Master", kind="TFJob"))  # another kind's namesake
    assert not seen.saw({"metadata": {"name": "loose", "labels": {LABEL_JOB_NAME: "train"}}})  # no owner
    assert seen.pods_of("train", of("u-1")) == [] and seen.pods_of("other", None) == [] and len(seen) == 0


def test_a_later_state_without_a_failure_never_replaces_one_kept():
    seen = FailedPodsSeen(FAMILY)
    seen.follow("train")
    seen.saw(pod("Worker"))
    assert not seen.saw(pod("Worker", exit_code=None))  # recreated under the same name, running
    (kept,) = seen.pods_of("train", of("u-1"))
    assert kept["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1


def test_a_predecessors_pods_are_not_a_successors():
    seen = FailedPodsSeen(FAMILY)
    seen.follow("train")
    seen.saw(pod("Master", uid="old"))
    assert seen.pods_of("train", of("new")) == [] and len(seen.pods_of("train", of("old"))) == 1
    assert len(seen.pods_of("train", None)) == 1


def test_what_is_kept_goes_with_the_last_follower_and_is_bounded_per_job():
    seen = FailedPodsSeen(FAMILY)
    seen.follow("train")
    seen.follow("train")  # the operator's trigger and a sensor's
    for index in range(FAILED_PODS_KEPT + 5):
        seen.saw(pod("Worker", index=index))
    assert len(seen) == FAILED_PODS_KEPT  # the first ones seen failing
    assert seen.saw(pod("Worker", index=0, running_after=2))  # one kept is updated, though the job is full
    seen.unfollow("train")
    assert seen.following("train") and len(seen) == FAILED_PODS_KEPT
    seen.unfollow("train")
    assert not seen.following("train") and len(seen) == 0
    assert not seen.saw(pod("Master"))
    seen.unfollow("never followed")  # harmless


def test_the_owner_is_the_controller_reference():
    owner = owner_of(pod("Master"))
    assert owner is not None and (owner.kind, owner.name, owner.uid) == ("PyTorchJob", "train", "u-1")
    other = {"metadata": {"ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "uid": "x"}]}}  # not a controller
    assert owner_of(other) is None and owner_of({}) is None


def test_the_pods_listed_now_come_first_and_those_seen_fill_in_the_gone():
    listed = [pod("Worker", exit_code=137)]
    seen = [pod("Master"), pod("Worker")]
    merged = with_pods_seen(listed, seen)
    assert [p["metadata"]["name"] for p in merged] == ["train-worker-0", "train-master-0"]
    assert merged[0] is listed[0]


def test_the_verdict_names_both_replicas_from_the_pods_seen_though_none_is_listed():
    """The flake: the pods and the ``ExitedWithCode`` events are gone; what the pod watch kept decides, as the
    synchronous wait's ``seen_pods`` do."""
    seen = FailedPodsSeen(FAMILY)
    seen.follow("train")
    for replica in ("Master", "Worker"):
        seen.saw(pod(replica, running_after=1))
    job = failed_job()
    without = judge_failure(job, with_pods_seen([], []), [], {}, FAMILY)
    assert "Master-0" not in without.message and "Worker-0" not in without.message
    verdict = judge_failure(job, with_pods_seen([], seen.pods_of("train", of("u-1"))), [], {}, FAMILY)
    assert {e.replica for e in verdict.ends if e.failed} == {"Master-0", "Worker-0"}
    assert "First failure" in verdict.message and "exit code 1" in verdict.message
    assert "Master-0" in verdict.message and "Worker-0" in verdict.message


def test_the_pods_alive_are_those_delivered_and_not_seen_deleted_of_followed_jobs_only():
    seen = FailedPodsSeen(FAMILY)
    seen.follow("train")
    seen.saw(pod("Master", exit_code=None))
    seen.saw(pod("Worker", exit_code=None))
    seen.saw(pod("Master", job="other", exit_code=None))  # no one follows "other"
    assert seen.alive_of("train") == {"train-master-0": "pod-train-Master-0", "train-worker-0": "pod-train-Worker-0"}
    assert seen.saw(pod("Master"), deleted=True)  # its final state: kept as failed, and no longer alive
    assert seen.alive_of("train") == {"train-worker-0": "pod-train-Worker-0"} and seen.alive_of("other") == {}
    seen.relisting()  # a new list: what it delivers is what is alive
    assert seen.alive_of("train") == {}
    seen.saw(pod("Worker", exit_code=None))
    seen.unfollow("train")
    assert seen.alive_of("train") == {}


def test_a_pod_alive_to_the_watch_that_a_later_list_lacks_or_has_as_another_uid_vanished_unseen():
    alive = {"train-master-0": "pod-train-Master-0", "train-worker-0": "pod-train-Worker-0"}
    again = pod("Master", exit_code=None)
    again["metadata"]["uid"] = "another"
    assert vanished_unseen(alive, [pod("Master"), pod("Worker")]) == []
    assert vanished_unseen(alive, [pod("Worker")]) == ["train-master-0"]
    assert vanished_unseen(alive, [again, pod("Worker")]) == ["train-master-0"]
    assert vanished_unseen(alive, []) == ["train-master-0", "train-worker-0"]
    assert vanished_unseen({}, [pod("Worker")]) == []  # listed but unknown to the watch: the list has its state
