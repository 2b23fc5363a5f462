"""Readiness of a Step's wait: which group of conditions wins and what it consumes.

Pure functions over the ``WaitingCondition`` a ``wait_for`` returned, the state of its
timers and the current Channel queue lengths; the interpreter applies the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dex.dexpb import dex_pb2 as pb

__all__ = ["WaitPlan", "build_condition_results", "channel_bounds", "plan_wait"]


@dataclass(frozen=True)
class WaitPlan:
    """The winning group of a satisfiable wait.

    Attributes:
        takes: For each channel condition of the winning group (by index), how many
            messages it consumes from the head of its Channel.
    """

    takes: Mapping[int, int]


def channel_bounds(condition: pb.ChannelCondition) -> tuple[int, int | None]:
    """Return (messages to wait for, most to consume); ``None`` is unbounded."""
    has_least = condition.HasField("at_least")
    has_most = condition.HasField("at_most")
    if not has_least and not has_most:
        return 1, 1
    if not has_least:
        return 0, condition.at_most
    if not has_most:
        return condition.at_least, None
    return condition.at_least, condition.at_most


def _groups(wait: pb.WaitingCondition) -> list[tuple[list[int], list[int], list[int]]]:
    timers = list(range(len(wait.timer_conditions)))
    channels = list(range(len(wait.channel_conditions)))
    sub_flows = list(range(len(wait.sub_flow_conditions)))
    kind = wait.waiting_condition_type
    if kind == pb.WAITING_CONDITION_TYPE_ANY_COMPLETED:
        # Canonical order: timers, then channels, then sub-flows (a timeout beats a message).
        return (
            [([t], [], []) for t in timers]
            + [([], [c], []) for c in channels]
            + [([], [], [s]) for s in sub_flows]
        )
    if kind == pb.WAITING_CONDITION_TYPE_ANY_COMBINATION_COMPLETED:
        groups: list[tuple[list[int], list[int], list[int]]] = []
        for combination in wait.condition_combinations:
            ids = set(combination.condition_ids)
            groups.append(
                (
                    [t for t in timers if wait.timer_conditions[t].condition_id in ids],
                    [c for c in channels if wait.channel_conditions[c].condition_id in ids],
                    [s for s in sub_flows if wait.sub_flow_conditions[s].condition_id in ids],
                )
            )
        return groups
    return [(timers, channels, sub_flows)]


def plan_wait(
    wait: pb.WaitingCondition,
    timer_done: Sequence[bool],
    channel_sizes: Mapping[str, int],
    sub_flow_done: Sequence[bool] = (),
) -> WaitPlan | None:
    """Return the first satisfiable group's plan, or ``None`` while the wait must go on.

    Channel minimums are reserved first (conditions on one Channel share its queue),
    then the remaining messages are handed out up to each condition's maximum, in order.
    """
    if not (wait.timer_conditions or wait.channel_conditions or wait.sub_flow_conditions):
        return WaitPlan(takes={})
    for timers, channels, sub_flows in _groups(wait):
        if not all(timer_done[t] for t in timers):
            continue
        if not all(s < len(sub_flow_done) and sub_flow_done[s] for s in sub_flows):
            continue
        available = dict(channel_sizes)
        takes: dict[int, int] = {}
        feasible = True
        for index in channels:
            condition = wait.channel_conditions[index]
            least, _ = channel_bounds(condition)
            left = available.get(condition.channel_name, 0) - least
            if left < 0:
                feasible = False
                break
            available[condition.channel_name] = left
            takes[index] = least
        if not feasible:
            continue
        for index in channels:
            condition = wait.channel_conditions[index]
            least, most = channel_bounds(condition)
            left = available.get(condition.channel_name, 0)
            extra = left if most is None else min(most - least, left)
            available[condition.channel_name] = left - extra
            takes[index] += extra
        return WaitPlan(takes=takes)
    return None


def build_condition_results(
    wait: pb.WaitingCondition,
    timer_done: Sequence[bool],
    consumed: Mapping[int, Sequence[pb.Value]],
) -> pb.ConditionResults:
    """Build the ``ConditionResults`` handed to ``execute`` (one entry per condition, in order)."""
    results = pb.ConditionResults()
    for index, timer in enumerate(wait.timer_conditions):
        results.timer_results.add(
            condition_id=timer.condition_id,
            condition_status=(
                pb.CONDITION_STATUS_COMPLETED if timer_done[index] else pb.CONDITION_STATUS_WAITING
            ),
        )
    for index, channel in enumerate(wait.channel_conditions):
        entry = results.channel_results.add(
            condition_id=channel.condition_id, channel_name=channel.channel_name
        )
        if index in consumed:
            entry.condition_status = pb.CONDITION_STATUS_COMPLETED
            entry.values.extend(consumed[index])
        else:
            entry.condition_status = pb.CONDITION_STATUS_WAITING
    for _ in wait.sub_flow_conditions:
        results.sub_flow_results.add(flow_status=pb.FLOW_STATUS_RUNNING)
    return results
