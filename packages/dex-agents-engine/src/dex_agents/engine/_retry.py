"""Retry policies of Step methods: when the next attempt runs, or that none will."""

from __future__ import annotations

from dataclasses import dataclass

from dex.dexpb import dex_pb2 as pb

__all__ = ["RetrySettings", "next_retry_delay"]

_DEFAULT_TOTAL_SECONDS = 4 * 3600


@dataclass(frozen=True)
class RetrySettings:
    """A resolved retry policy; zero fields of the wire policy take the Dex defaults.

    Attributes:
        initial_interval: Delay before the second attempt, in seconds.
        backoff_coefficient: Growth factor of the delay per attempt.
        maximum_interval: Cap on one delay, in seconds.
        maximum_attempts: Attempts in all, the first included; 0 is unlimited.
        total_duration: Budget from the first attempt's start, in seconds; 0 is unlimited.
    """

    initial_interval: float = 1.0
    backoff_coefficient: float = 2.0
    maximum_interval: float = 100.0
    maximum_attempts: int = 0
    total_duration: float = _DEFAULT_TOTAL_SECONDS

    @classmethod
    def from_proto(cls, policy: pb.RetryPolicy | None) -> RetrySettings:
        """Resolve a wire policy (absent or zero fields use the defaults)."""
        if policy is None:
            return cls()
        return cls(
            initial_interval=float(policy.initial_interval_seconds or 1),
            backoff_coefficient=float(policy.backoff_coefficient or 2.0),
            maximum_interval=float(policy.maximum_interval_seconds or 100),
            maximum_attempts=max(0, policy.maximum_attempts),
            total_duration=float(policy.total_duration_seconds or _DEFAULT_TOTAL_SECONDS),
        )


def next_retry_delay(
    settings: RetrySettings,
    failed_attempt: int,
    elapsed_since_first_attempt: float,
    retry_after_seconds: int = 0,
) -> float | None:
    """Seconds until the next attempt, or ``None`` when the failure is final.

    ``retry_after_seconds`` (from the SDK's ``retry_after``) replaces the computed
    interval for this one retry.
    """
    if settings.maximum_attempts and failed_attempt >= settings.maximum_attempts:
        return None
    if retry_after_seconds > 0:
        delay = float(retry_after_seconds)
    else:
        delay = min(
            settings.initial_interval * settings.backoff_coefficient ** (failed_attempt - 1),
            settings.maximum_interval,
        )
    if settings.total_duration and elapsed_since_first_attempt + delay >= settings.total_duration:
        return None
    return delay
