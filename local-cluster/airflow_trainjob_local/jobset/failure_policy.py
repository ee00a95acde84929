"""What a JobSet does when one of its Jobs failed: upstream ``executeFailurePolicy``
(``pkg/controllers/failure_policy.go``). Without a failurePolicy the JobSet fails (FailedJobs); with one, the
first rule matching a failed Job decides (FailJobSet, RestartJobSet, RestartJobSetAndIgnoreMaxRestarts), and
no match restarts the JobSet while ``maxRestarts`` allows. Pure.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.conditions import FALSE, TRUE, job_failure_condition
from airflow_trainjob_local.jobset.spec import JobSetView
from airflow_trainjob_local.kube import parse_time

if TYPE_CHECKING:
    from airflow_trainjob_local.jobset.jobset_plan import JobSetPlan

__all__ = ["apply_failure_policy", "first_failed_job", "with_first_failed_job"]

WARNING = "Warning"
NORMAL = "Normal"


def with_first_failed_job(message: str, job_name: str) -> str:
    """Upstream ``messageWithFirstFailedJob``."""
    return f"{message} (first failed job: {job_name})"


def _failed_at(job: dict[str, Any]) -> Any:
    condition = job_failure_condition(job) or {}
    return parse_time(condition.get("lastTransitionTime"))


def first_failed_job(failed: list[dict[str, Any]]) -> dict[str, Any]:
    """The Job whose Failed condition is the oldest (``findFirstFailedJob``); ties: the first listed."""
    dated = [(j, _failed_at(j)) for j in failed]
    known = [(j, t) for j, t in dated if t is not None]
    if not known:
        return failed[0]
    return min(known, key=lambda pair: pair[1])[0]


def _rule_applies(rule: dict[str, Any], job: dict[str, Any]) -> bool:
    """``ruleIsApplicable``: the Job's failure reason, message (any pattern, regex search) and replicated job."""
    condition = job_failure_condition(job) or {}
    reasons = rule.get("onJobFailureReasons") or []
    if reasons and condition.get("reason") not in reasons:
        return False
    patterns = rule.get("onJobFailureMessagePatterns") or []
    if patterns and not any(_search(p, str(condition.get("message") or "")) for p in patterns):
        return False
    rjob = ((job.get("metadata") or {}).get("labels") or {}).get(c.LABEL_REPLICATED_JOB_NAME)
    if not rjob:
        return False
    targets = rule.get("targetReplicatedJobs") or []
    return not targets or rjob in targets


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False  # upstream logs an invalid pattern and goes on


def _matching_rule(
    rules: list[dict[str, Any]], failed: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``findFirstFailedPolicyRuleAndJob``: the first rule that matches a failed Job, with the earliest such Job."""
    for rule in rules:
        matching = [j for j in failed if job_failure_condition(j) is not None and _rule_applies(rule, j)]
        if matching:
            return rule, first_failed_job(matching)
    return None


def set_failed(plan: JobSetPlan, reason: str, message: str, stamp: str) -> None:
    """``setJobSetFailedCondition``: Failed, RestartingJobSet False, terminalState Failed."""
    plan.condition(WARNING, c.CONDITION_FAILED, TRUE, reason, message, stamp)
    plan.condition(
        NORMAL,
        c.CONDITION_RESTARTING,
        FALSE,
        c.REASON_RESTARTING_JOBSET_FAILED,
        c.MESSAGE_RESTARTING_JOBSET_FAILED,
        stamp,
    )
    if plan.status.get("terminalState") != c.TERMINAL_FAILED:
        plan.status["terminalState"] = c.TERMINAL_FAILED
        plan.changed = True


def apply_failure_policy(view: JobSetView, plan: JobSetPlan, failed: list[dict[str, Any]], stamp: str) -> None:
    """Apply the JobSet's failure policy to its failed Jobs (at least one), changing ``plan``.

    :param stamp: now, as the API writes times.
    """
    policy = view.failure_policy
    if policy is None:
        name = first_failed_job(failed)["metadata"]["name"]
        set_failed(plan, c.REASON_FAILED_JOBS, with_first_failed_job(c.MESSAGE_FAILED_JOBS, name), stamp)
        return
    match = _matching_rule(policy.get("rules") or [], failed)
    rule, job = match if match is not None else (None, first_failed_job(failed))
    action = rule.get("action", c.ACTION_RESTART_JOBSET) if rule is not None else c.ACTION_RESTART_JOBSET
    name = job["metadata"]["name"]
    if action == c.ACTION_FAIL_JOBSET:
        set_failed(plan, c.REASON_FAIL_JOBSET_ACTION, with_first_failed_job(c.MESSAGE_FAIL_JOBSET_ACTION, name), stamp)
        return
    counts = action != c.ACTION_RESTART_JOBSET_IGNORE_MAX
    if action not in (c.ACTION_RESTART_JOBSET, c.ACTION_RESTART_JOBSET_IGNORE_MAX):
        # RestartJob / RestartJobAndIgnoreMaxRestarts need upstream's RestartJob feature gate (off by default):
        # upstream reports an error and retries; nothing changes here.
        plan.events.append(
            (WARNING, "FailurePolicyActionUnsupported", f"failure policy action {action} is not supported")
        )
        return
    if counts and int(plan.status.get("restartsCountTowardsMax") or 0) >= int(policy.get("maxRestarts") or 0):
        set_failed(
            plan, c.REASON_REACHED_MAX_RESTARTS, with_first_failed_job(c.MESSAGE_REACHED_MAX_RESTARTS, name), stamp
        )
        return
    if counts:
        reason, base = c.REASON_RESTART_JOBSET_ACTION, c.MESSAGE_RESTART_JOBSET_ACTION
    else:
        reason, base = c.REASON_RESTART_IGNORE_MAX_ACTION, c.MESSAGE_RESTART_IGNORE_MAX_ACTION
    message = with_first_failed_job(base, name)
    _restart(plan, counts)
    condition_reason = c.REASON_RESTARTING_RULE_FORMAT.format(rule["name"]) if rule else c.REASON_RESTARTING_DEFAULT
    plan.condition(WARNING, c.CONDITION_RESTARTING, TRUE, condition_reason, message, stamp)
    plan.events.append((WARNING, reason, message))


def _restart(plan: JobSetPlan, counts_towards_max: bool) -> None:
    """``failurePolicyRecreateAll``: the next restart attempt; the next reconcile deletes the Jobs of this one."""
    plan.status["restarts"] = int(plan.status.get("restarts") or 0) + 1
    if counts_towards_max:
        plan.status["restartsCountTowardsMax"] = int(plan.status.get("restartsCountTowardsMax") or 0) + 1
    plan.changed = True
