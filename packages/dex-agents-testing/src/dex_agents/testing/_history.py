"""Step history of a flow, read from the engine's ``FlowService.GetHistoryEvents``."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from dex.dexpb import dex_pb2, dex_pb2_grpc

__all__ = [
    "EXECUTE_COMPLETED_EVENT",
    "EXECUTE_FAILED_EVENT",
    "WAIT_FOR_COMPLETED_EVENT",
    "WAIT_FOR_FAILED_EVENT",
    "StepHistoryEntry",
    "read_step_history",
]

EXECUTE_COMPLETED_EVENT = "step_execute_completed"
"""A Step's ``execute`` succeeded (its decision is durable)."""

WAIT_FOR_COMPLETED_EVENT = "step_wait_for_completed"
"""A Step's ``wait_for`` succeeded (it returned its wait condition)."""

EXECUTE_FAILED_EVENT = "step_execute_failed"
"""A Step's ``execute`` failed for good (every attempt failed)."""

WAIT_FOR_FAILED_EVENT = "step_wait_for_failed"
"""A Step's ``wait_for`` failed for good."""

_PAGE_SIZE = 200


@dataclass(frozen=True, kw_only=True)
class StepHistoryEntry:
    """One finished Step method in a flow's history.

    Attributes:
        event_type: One of :data:`EXECUTE_COMPLETED_EVENT`, :data:`WAIT_FOR_COMPLETED_EVENT`,
            :data:`EXECUTE_FAILED_EVENT` and :data:`WAIT_FOR_FAILED_EVENT`.
        step_type: The Step's type, e.g. ``"RunModel"``.
        step_execution_id: The Step execution, e.g. ``"RunModel-2"``.
        final_attempt: The attempt that finished it (1 unless a retry ran it).
    """

    event_type: str
    step_type: str
    step_execution_id: str
    final_attempt: int


async def read_step_history(server_address: str, flow_id: str) -> list[StepHistoryEntry]:
    """List the finished Step methods of a flow's current run, in the order they finished.

    It reads the run with ``FlowService.GetFlowSummary`` and pages through
    ``FlowService.GetHistoryEvents``, keeping the completed and failed ``execute`` and
    ``wait_for`` events.

    Args:
        server_address: The engine's ``host:port``.
        flow_id: The flow (an agent session's ID is its flow ID).

    Returns:
        One entry per finished Step method, oldest first.

    Raises:
        grpc.aio.AioRpcError: The flow does not exist (``NOT_FOUND``) or the engine failed.
    """
    async with grpc.aio.insecure_channel(server_address) as channel:
        service = dex_pb2_grpc.FlowServiceStub(channel)  # type: ignore[no-untyped-call]
        summary: dex_pb2.GetFlowSummaryResponse = await service.GetFlowSummary(
            dex_pb2.GetFlowSummaryRequest(flow_id=flow_id)
        )
        run_id = summary.flow_execution_id.run_id
        entries: list[StepHistoryEntry] = []
        page_token = b""
        while True:
            page: dex_pb2.GetHistoryEventsResponse = await service.GetHistoryEvents(
                dex_pb2.GetHistoryEventsRequest(
                    flow_id=flow_id,
                    run_id=run_id,
                    estimate_page_size=_PAGE_SIZE,
                    next_page_token=page_token,
                )
            )
            entries.extend(entry for entry in map(_step_entry, page.events) if entry is not None)
            if not page.next_page_token or not page.events:
                return entries
            page_token = page.next_page_token


def _step_entry(event: dex_pb2.FlowHistoryEvent) -> StepHistoryEntry | None:
    kind = event.WhichOneof("payload")
    context: dex_pb2.StepMethodEventContext
    if kind == EXECUTE_COMPLETED_EVENT:
        context = event.step_execute_completed.context
    elif kind == WAIT_FOR_COMPLETED_EVENT:
        context = event.step_wait_for_completed.context
    elif kind == EXECUTE_FAILED_EVENT:
        context = event.step_execute_failed.context
    elif kind == WAIT_FOR_FAILED_EVENT:
        context = event.step_wait_for_failed.context
    else:
        return None
    return StepHistoryEntry(
        event_type=kind,
        step_type=context.step_type,
        step_execution_id=context.step_execution_id,
        final_attempt=context.final_attempt,
    )
