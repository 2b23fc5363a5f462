"""Serving an engine over gRPC: :class:`LocalEngine` runs one inside this process."""

from __future__ import annotations

from types import TracebackType

import grpc
from dex.dexpb import dex_pb2_grpc

from dex_agents.engine._config import EngineConfig
from dex_agents.engine._engine import Engine
from dex_agents.engine._pull import WorkerTaskServicer
from dex_agents.engine._service import FlowServicer

__all__ = ["LocalEngine"]

_MiB = 1024 * 1024


class LocalEngine:
    """A Dex engine serving gRPC on this process's event loop.

    Use it as an async context manager; ``address`` is known once it is entered::

        async with LocalEngine(EngineConfig(data_dir=path)) as engine:
            client = AsyncClient(ClientOptions(server_address=engine.address))

    Args:
        config: Storage and timing settings.
        address: ``host:port`` to bind; port 0 picks a free port.
    """

    def __init__(self, config: EngineConfig, *, address: str = "127.0.0.1:0") -> None:
        self.config = config
        self._bind = address
        self._server: grpc.aio.Server | None = None
        self._engine: Engine | None = None
        self.address = ""

    async def start(self) -> str:
        """Open the store, resume every flow, and start serving; return the bound address."""
        engine = Engine(self.config)
        engine.open()
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", 16 * _MiB),
                ("grpc.max_send_message_length", 4 * _MiB),
                ("grpc.so_reuseport", 0),
            ]
        )
        dex_pb2_grpc.add_FlowServiceServicer_to_server(FlowServicer(engine), server)  # type: ignore[no-untyped-call]
        dex_pb2_grpc.add_WorkerTaskServiceServicer_to_server(  # type: ignore[no-untyped-call]
            WorkerTaskServicer(engine.router), server
        )
        host = self._bind.rsplit(":", 1)[0]
        port = server.add_insecure_port(self._bind)
        if port == 0:
            await engine.close()
            raise OSError(f"cannot bind {self._bind}")
        await server.start()
        self._engine = engine
        self._server = server
        self.address = f"{host}:{port}"
        return self.address

    async def stop(self, grace: float = 1.0) -> None:
        """Stop serving, end Worker streams, and close the store."""
        if self._engine is not None:
            self._engine.router.close()
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        if self._engine is not None:
            await self._engine.close()
            self._engine = None

    async def wait_closed(self) -> None:
        """Wait until the server stops."""
        if self._server is not None:
            await self._server.wait_for_termination()

    async def __aenter__(self) -> LocalEngine:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
