"""Reading and writing a run's Attributes and Channels on behalf of handlers.

Builds the state part of Worker requests (with selective loading and blob offload) and
applies the side effects of handler results (Attribute writes, search indexes, Channel
publications and deletions).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import UTC
from typing import Protocol

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine._model import ChannelEntry, Run
from dex_agents.engine._search import SearchValue, Timestamp, parse_time
from dex_agents.engine._store import Changes, Store

__all__ = [
    "BlobSink",
    "InlineBlobs",
    "apply_attribute_writes",
    "apply_deletions",
    "apply_publications",
    "fill_state",
    "missing_deletions",
    "search_attributes",
    "search_value_to_wire",
    "uuid7",
]

_STATUS_NAMES: dict[int, str] = {
    pb.FLOW_STATUS_RUNNING: "Running",
    pb.FLOW_STATUS_COMPLETED: "Completed",
    pb.FLOW_STATUS_FAILED: "Failed",
    pb.FLOW_STATUS_CANCELED: "Canceled",
    pb.FLOW_STATUS_TERMINATED: "Terminated",
    pb.FLOW_STATUS_CONTINUED_AS_NEW: "ContinuedAsNew",
    pb.FLOW_STATUS_SERVER_SIDE_TIMEOUT_INTERNAL_ONLY: "TimedOut",
}


def uuid7() -> str:
    """A time-ordered UUIDv7, as the Dex server assigns to Channel messages."""
    import os
    import time

    millis = int(time.time() * 1000)
    raw = bytearray(millis.to_bytes(6, "big") + os.urandom(10))
    raw[6] = (raw[6] & 0x0F) | 0x70
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


class BlobSink(Protocol):
    """Where values too large to inline go."""

    def offload(self, flow_id: str, value: pb.Value) -> pb.Value:
        """Return ``value`` or a blob reference to it."""


def _selected(key: str, selectors: Sequence[str]) -> bool:
    for selector in selectors:
        if selector.endswith("/"):
            if key.startswith(selector):
                return True
        elif key == selector:
            return True
    return False


WorkerRequest = (
    pb.InvokeWaitForMethodRequest | pb.InvokeExecuteMethodRequest | pb.InvokeWorkerRPCRequest
)


def fill_state(
    run: Run,
    request: WorkerRequest,
    attribute_maps: Sequence[str],
    channel_names: Sequence[str],
    channel_maps: Sequence[str],
    blobs: BlobSink,
) -> None:
    """Fill the state fields every Worker request carries.

    Singleton Attributes always load; AttributeMap instances and Channel messages load
    only when selected. The ``loaded_*`` lists echo the selectors, as the SDK checks them.
    """
    for key in sorted(run.attributes):
        if "/" not in key or _selected(key, attribute_maps):
            request.attributes.add(key=key, value=blobs.offload(run.flow_id, run.attributes[key]))
    for name, queue in run.channels.items():
        if not queue:
            continue
        request.channel_infos[name].size = len(queue)
        if name in channel_names or ("/" in name and _selected(name, channel_maps)):
            loaded = request.loaded_channel_messages[name]
            for entry in queue:
                loaded.messages.add(
                    channel_name=name,
                    message_id=entry.message_id,
                    value=blobs.offload(run.flow_id, entry.value),
                )
    request.loaded_attribute_map_instances.extend(attribute_maps)
    request.loaded_channel_names.extend(channel_names)
    request.loaded_channel_map_instances.extend(channel_maps)


IndexValue = str | int | float | bool | list[str] | None


def _index_value(kind: int, value: pb.Value) -> IndexValue:
    arm = value.WhichOneof("kind")
    text: str | int | float | bool
    if arm == "obj_value":
        text = value.obj_value.payload.decode("utf-8", "replace")
    elif arm is None or arm == "null_value":
        return None
    else:
        text = getattr(value, arm)
    if kind in (pb.INDEX_TYPE_KEYWORD, pb.INDEX_TYPE_TEXT, pb.INDEX_TYPE_DATETIME):
        return str(text).lower() if isinstance(text, bool) else str(text)
    if kind == pb.INDEX_TYPE_KEYWORD_ARRAY:
        items = json.loads(text) if isinstance(text, str) else None
        return [str(item) for item in items] if isinstance(items, list) else None
    try:
        if kind == pb.INDEX_TYPE_INT:
            return int(text)
        if kind == pb.INDEX_TYPE_DOUBLE:
            return float(text)
        if kind == pb.INDEX_TYPE_BOOL:
            return text if isinstance(text, bool) else str(text).lower() == "true"
    except (TypeError, ValueError):
        return None
    return None


def _inferred_index_type(value: pb.Value) -> int:
    arm = value.WhichOneof("kind")
    return {
        "int_value": pb.INDEX_TYPE_INT,
        "double_value": pb.INDEX_TYPE_DOUBLE,
        "bool_value": pb.INDEX_TYPE_BOOL,
    }.get(arm or "", pb.INDEX_TYPE_KEYWORD)


def apply_attribute_writes(
    run: Run,
    writes: Iterable[pb.AttributeWrite],
    changes: Changes,
    indexes: dict[str, int],
) -> bool:
    """Apply Attribute writes in order (null deletes); return whether any was applied."""
    applied = False
    for write in writes:
        applied = True
        deleting = write.value.WhichOneof("kind") in (None, "null_value")
        if deleting:
            run.attributes.pop(write.key, None)
            changes.attributes[(run.run_id, write.key)] = None
        else:
            value = pb.Value()
            value.CopyFrom(write.value)
            run.attributes[write.key] = value
            changes.attributes[(run.run_id, write.key)] = value.SerializeToString()
        if write.HasField("index_config") and write.index_config.enable:
            key = write.index_config.index_key or write.key.split("/", 1)[0]
            kind = write.index_config.type or indexes.get(key) or _inferred_index_type(write.value)
            converted = None if deleting else _index_value(kind, write.value)
            if converted is None:
                run.app_search.pop(key, None)
            else:
                run.app_search[key] = [kind, converted]
            changes.touch(run)
    return applied


def apply_publications(run: Run, messages: Iterable[pb.ChannelMessage], changes: Changes) -> bool:
    """Append messages to their Channels with fresh ids; return whether any was added."""
    added = False
    for message in messages:
        value = pb.Value()
        value.CopyFrom(message.value)
        if value.WhichOneof("kind") is None:
            value.null_value = 0  # type: ignore[assignment]
        entry = ChannelEntry(run.next_channel_seq, uuid7(), value)
        run.next_channel_seq += 1
        run.channels.setdefault(message.channel_name, deque()).append(entry)
        changes.channel_added.append(
            (
                run.run_id,
                entry.seq,
                message.channel_name,
                entry.message_id,
                value.SerializeToString(),
            )
        )
        added = True
    if added:
        changes.touch(run)
    return added


def missing_deletions(run: Run, deletions: Iterable[pb.ChannelMessageDeletion]) -> list[str]:
    """Message ids among ``deletions`` that are no longer pending."""
    missing = []
    for deletion in deletions:
        queue = run.channels.get(deletion.channel_name, deque())
        if not any(entry.message_id == deletion.message_id for entry in queue):
            missing.append(deletion.message_id)
    return missing


def apply_deletions(
    run: Run, deletions: Iterable[pb.ChannelMessageDeletion], changes: Changes
) -> None:
    """Delete pending messages by id; ids no longer pending are ignored."""
    for deletion in deletions:
        queue = run.channels.get(deletion.channel_name)
        if not queue:
            continue
        for entry in list(queue):
            if entry.message_id == deletion.message_id:
                queue.remove(entry)
                changes.channel_removed.append((run.run_id, entry.seq))


def _active_step_types(run: Run) -> tuple[str, ...]:
    mode = run.config.active_step_search_mode
    if mode == pb.ACTIVE_STEP_SEARCH_MODE_DISABLED:
        return ()
    every = mode == pb.ACTIVE_STEP_SEARCH_MODE_ENABLED_FOR_ALL
    return tuple(
        sorted(
            {
                execution.step_type
                for execution in run.executions.values()
                if not execution.system and (every or not execution.options.skip_wait_for)
            }
        )
    )


def search_attributes(run: Run) -> dict[str, SearchValue]:
    """Every search attribute of a run: system keys and application indexes."""
    values: dict[str, SearchValue] = {
        "FlowType": run.flow_type,
        "WorkflowId": run.flow_id,
        "FlowId": run.flow_id,
        "ExecutionStatus": _STATUS_NAMES.get(run.status, "Running"),
        "StartTime": Timestamp(run.start_time),
    }
    if run.close_time is not None:
        values["CloseTime"] = Timestamp(run.close_time)
    if run.is_open:
        values["ActiveStepTypes"] = _active_step_types(run)
    for key, (kind, value) in run.app_search.items():
        if kind == pb.INDEX_TYPE_KEYWORD_ARRAY:
            values[key] = tuple(value)
        elif kind == pb.INDEX_TYPE_DATETIME:
            parsed = parse_time(value)
            values[key] = Timestamp(parsed) if parsed is not None else value
        else:
            values[key] = value
    return values


def search_value_to_wire(value: SearchValue) -> pb.Value:
    """A search attribute as ``SearchFlowsResponseEntry.indexed_attributes`` carries it."""
    from datetime import datetime

    if isinstance(value, tuple):
        return pb.Value(
            obj_value=pb.EncodedObject(encoding="json", payload=json.dumps(list(value)).encode())
        )
    if isinstance(value, Timestamp):
        return pb.Value(string_value=datetime.fromtimestamp(value.seconds, UTC).isoformat())
    if isinstance(value, bool):
        return pb.Value(bool_value=value)
    if isinstance(value, int):
        return pb.Value(int_value=value)
    if isinstance(value, float):
        return pb.Value(double_value=value)
    return pb.Value(string_value=value)


class InlineBlobs:
    """A :class:`BlobSink` that offloads values above a size threshold to the store."""

    def __init__(self, store: Store, threshold_bytes: int) -> None:
        self._store = store
        self._threshold = threshold_bytes

    def offload(self, flow_id: str, value: pb.Value) -> pb.Value:
        """Return ``value`` or a content-addressed blob reference to it."""
        arm = value.WhichOneof("kind")
        if arm == "string_value":
            payload = value.string_value.encode("utf-8")
        elif arm == "obj_value":
            payload = value.obj_value.SerializeToString()
        else:
            return value
        if len(payload) <= self._threshold:
            return value
        blob_id = hashlib.sha256(arm.encode() + b":" + payload).hexdigest()
        self._store.put_blob(flow_id, blob_id, value.SerializeToString())
        if arm == "string_value":
            return pb.Value(internal_blob_id_for_string_value=blob_id)
        return pb.Value(internal_blob_id_for_obj_value=blob_id)
