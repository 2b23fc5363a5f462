"""Push mode: the engine calls a sync Worker's WorkerService at the flow's target."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import dex
import pytest
from dex import Context, StepDecision
from engine_harness import EngineProcess

notes = dex.Channel("notes", str)


class First(dex.Step[str]):
    def execute(self, context: Context, input: str) -> StepDecision:
        return dex.go_to(Second, input + "!")


class Second(dex.Step[str]):
    def wait_for(self, context: Context, input: str) -> dex.Wait:
        return dex.Wait.until(notes.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        if context.attempt == 1:
            raise RuntimeError("push retry")
        return dex.graceful_complete(f"{input}{notes.results(context)[0]}")


class Pushed(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(First()).other_steps(Second())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(notes)

    @dex.rpc()
    def note(self, context: Context, text: str) -> None:
        notes.publish(context, text)

    @dex.rpc()
    def fail(self, context: Context) -> None:
        raise ValueError("rejected by the handler")


FLOW = Pushed()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def push_worker(engine_process: EngineProcess, tmp_path: Path) -> Iterator[dex.Worker]:
    registry = dex.Registry([FLOW])
    cache = dex.open_blob_cache(
        dex.BlobCacheConfig(directory=str(tmp_path / "c"), max_bytes=1 << 24)
    )
    worker = dex.Worker(
        registry,
        cache,
        dex.WorkerOptions(
            server_address=engine_process.address, bind_address=f"127.0.0.1:{_free_port()}"
        ),
    )
    thread = threading.Thread(target=worker.start, daemon=True)
    thread.start()
    host, port = worker.worker_target.address.rsplit(":", 1)
    for _ in range(200):
        with socket.socket() as probe:
            if probe.connect_ex((host, int(port))) == 0:
                break
        time.sleep(0.05)
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=30)
        cache.close()


def test_push_worker_runs_steps_rpcs_and_retries(
    engine_process: EngineProcess, push_worker: dex.Worker, tmp_path: Path
) -> None:
    registry = dex.Registry([FLOW])
    cache = dex.open_blob_cache(
        dex.BlobCacheConfig(directory=str(tmp_path / "k"), max_bytes=1 << 24)
    )
    client = dex.Client(
        registry,
        cache,
        dex.ClientOptions(
            server_address=engine_process.address, worker_target=push_worker.worker_target
        ),
    )
    try:
        client.start_flow(FLOW, "push", "hi")
        client.invoke_rpc(FLOW.note, "push", "there")
        result = client.wait_for_flow("push", timedelta(seconds=20))
        assert result.single_output(str) == "hi!there"
        client.start_flow(FLOW, "push-rpc", "x")
        with pytest.raises(dex.WorkerInvocationError) as failure:
            client.invoke_rpc(FLOW.fail, "push-rpc")
        assert "rejected by the handler" in (failure.value.worker_error_detail or "")
        assert "ValueError" in (failure.value.worker_error_type or "")
    finally:
        client.close()
        cache.close()
