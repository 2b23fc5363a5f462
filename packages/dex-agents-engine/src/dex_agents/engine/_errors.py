"""gRPC errors in the exact rich-status shape that dex-python-sdk 1.23.0 decodes.

The SDK only trusts ``grpc-status-details-bin`` when the embedded ``google.rpc.Status``
repeats the call's code and message byte for byte, so every error leaves the engine
through :meth:`ServiceError.to_status`.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from dex.dexpb import dex_pb2 as pb
from google.protobuf import any_pb2
from google.rpc import status_pb2
from grpc_status import rpc_status

__all__ = [
    "ServiceError",
    "bad_request",
    "flow_not_found",
    "long_poll_timeout",
    "request_timeout",
]


@dataclass(eq=False)
class ServiceError(Exception):
    """A failure answered to a FlowService caller.

    Attributes:
        code: gRPC status code of the call.
        message: gRPC details string; also the rich status message.
        sub_status: Dex sub-status that picks the SDK exception class.
        response: Extra ``ServiceErrorResponse`` fields (worker error details).
    """

    code: grpc.StatusCode
    message: str
    sub_status: int = pb.ERROR_SUB_STATUS_UNCATEGORIZED
    response: pb.ServiceErrorResponse | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def to_status(self) -> grpc.Status:
        """Encode as a gRPC status whose rich details the SDK accepts."""
        detail = pb.ServiceErrorResponse()
        if self.response is not None:
            detail.CopyFrom(self.response)
        detail.sub_status = self.sub_status  # type: ignore[assignment]
        if not detail.detail and not detail.original_worker_error_detail:
            detail.detail = self.message
        packed = any_pb2.Any()
        packed.Pack(detail)
        status = status_pb2.Status(code=self.code.value[0], message=self.message, details=[packed])
        return rpc_status.to_status(status)


def bad_request(message: str) -> ServiceError:
    """``INVALID_ARGUMENT``: the SDK raises a plain ``DexServiceError``."""
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, message)


def flow_not_found(flow_id: str, *, closed: bool = False) -> ServiceError:
    """``NOT_FOUND`` + ``FLOW_NOT_EXISTS``: missing flow, or closed for "active" calls."""
    state = "is closed" if closed else "does not exist"
    return ServiceError(
        grpc.StatusCode.NOT_FOUND,
        f"flow {flow_id!r} {state}",
        pb.ERROR_SUB_STATUS_FLOW_NOT_EXISTS,
    )


def long_poll_timeout(what: str) -> ServiceError:
    """``DEADLINE_EXCEEDED`` + ``LONG_POLL_TIME_OUT``: the caller should ask again."""
    return ServiceError(
        grpc.StatusCode.DEADLINE_EXCEEDED,
        f"long poll for {what} timed out",
        pb.ERROR_SUB_STATUS_LONG_POLL_TIME_OUT,
    )


def request_timeout(what: str) -> ServiceError:
    """``DEADLINE_EXCEEDED`` + ``REQUEST_TIMEOUT``: the caller's own budget ran out."""
    return ServiceError(
        grpc.StatusCode.DEADLINE_EXCEEDED,
        f"request timeout while waiting for {what}",
        pb.ERROR_SUB_STATUS_REQUEST_TIMEOUT,
    )
