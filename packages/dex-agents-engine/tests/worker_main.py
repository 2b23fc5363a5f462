"""A pull Worker child process: ``worker_main.py ADDRESS MODULE:ATTR STATE_DIR MAX_TASKS``.

``MODULE:ATTR`` names a list of flows. Prints ``ready`` once every queue registered.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from pathlib import Path

import dex


async def _main(address: str, flows_ref: str, state_dir: str, max_tasks: int) -> None:
    os.environ["ENGINE_TEST_STATE"] = state_dir
    module_name, attr = flows_ref.split(":")
    flows = getattr(importlib.import_module(module_name), attr)
    registry = dex.Registry(list(flows), allow_async_handlers=True)
    cache = dex.open_blob_cache(
        dex.BlobCacheConfig(
            directory=str(Path(state_dir) / f"cache-{os.getpid()}"), max_bytes=1 << 24
        )
    )
    worker = dex.AsyncWorker(
        registry,
        cache,
        dex.WorkerOptions(
            server_address=address, pull=dex.PullWorkerOptions(max_concurrent_tasks=max_tasks)
        ),
    )
    running = asyncio.create_task(worker.start())
    await worker.wait_pull_registered(timeout=30)
    print("ready", flush=True)
    await running


if __name__ == "__main__":
    asyncio.run(_main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
