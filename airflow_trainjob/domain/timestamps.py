"""The API server's times (RFC 3339, ``2026-12-07T10:00:05Z``) as epoch seconds: one reading for every module that
compares or subtracts them."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def epoch(timestamp: Any) -> float | None:
    """``timestamp`` as epoch seconds; None for anything but a non-empty RFC 3339 string.

    :param timestamp: a time as the API writes it (``lastTransitionTime``, ``creationTimestamp``...), or anything.
    """
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
