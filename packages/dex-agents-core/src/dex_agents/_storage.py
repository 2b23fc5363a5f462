"""Message storage: the window of newest messages and immutable chunks of older ones.

Storing a message writes only that message (one ``AgentMessages`` instance). When the
window outgrows ``window_size``, its oldest messages move into ``AgentMessageChunks``
instances in the same commit, at most ``max_chunks_per_commit`` chunks and
``max_bytes_per_commit`` bytes per commit, so a long session never rewrites old messages.
Everything here is pure: Steps apply the :class:`StoragePlan` it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from dex_agents._messages import AgentMessage
from dex_agents._wire import dumps

__all__ = [
    "AgentMessageChunk",
    "AgentMessageIndex",
    "MessageChunkRef",
    "StorageLimits",
    "StoragePlan",
    "encoded_size",
    "next_sequence",
    "plan_append",
]

_MiB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class MessageChunkRef:
    """Where one kept chunk starts and ends."""

    first_sequence: int
    last_sequence: int


@dataclass(frozen=True, kw_only=True)
class AgentMessageIndex:
    """The ``AgentMessageIndex`` Attribute; unset until a Step first writes a chunk.

    Attributes:
        chunks: Every kept chunk, oldest first.
        window_first_sequence: The first message still in ``AgentMessages``.
        first_sequence: The oldest stored message.
    """

    chunks: tuple[MessageChunkRef, ...] = ()
    window_first_sequence: int = 1
    first_sequence: int = 1


@dataclass(frozen=True, kw_only=True)
class AgentMessageChunk:
    """An immutable run of consecutive messages (``AgentMessageChunks[first sequence]``)."""

    first_sequence: int
    messages: tuple[AgentMessage, ...]


@dataclass(frozen=True, kw_only=True)
class StorageLimits:
    """How large the window and chunks grow.

    Attributes:
        window_size: Messages kept one per instance before the oldest move into chunks.
        chunk_size: Most messages in one chunk.
        chunk_max_bytes: Most encoded bytes in one chunk (at most 8 MiB).
        max_chunks_per_commit: Most chunks one commit writes.
        max_bytes_per_commit: Most chunk bytes one commit writes.
    """

    window_size: int = 64
    chunk_size: int = 32
    chunk_max_bytes: int = _MiB
    max_chunks_per_commit: int = 4
    max_bytes_per_commit: int = 8 * _MiB

    def __post_init__(self) -> None:
        if self.window_size < 1 or self.chunk_size < 1:
            raise ValueError("message_window_size and message_chunk_size must be at least 1")
        if not 1 <= self.chunk_max_bytes <= 8 * _MiB:
            raise ValueError("message_chunk_max_bytes must be between 1 byte and 8 MiB")


@dataclass(frozen=True, kw_only=True)
class StoragePlan:
    """What one commit writes to store new messages.

    Attributes:
        window_writes: Messages to write to ``AgentMessages``.
        window_deletes: Sequences to delete from ``AgentMessages`` (moved into chunks).
        chunk_writes: Chunks to write to ``AgentMessageChunks``.
        index: The new ``AgentMessageIndex``, or ``None`` when it does not change.
    """

    window_writes: tuple[AgentMessage, ...] = ()
    window_deletes: tuple[int, ...] = ()
    chunk_writes: tuple[AgentMessageChunk, ...] = ()
    index: AgentMessageIndex | None = None


def encoded_size(message: AgentMessage) -> int:
    """Bytes of a message's stored JSON."""
    return len(dumps(message).encode("utf-8"))


def next_sequence(window: Sequence[AgentMessage], index: AgentMessageIndex | None) -> int:
    """The sequence the next stored message gets."""
    last = max((message.sequence for message in window), default=0)
    if index is not None and index.chunks:
        last = max(last, index.chunks[-1].last_sequence)
    return last + 1


def _take_chunk(
    messages: Sequence[AgentMessage], limits: StorageLimits, size: Callable[[AgentMessage], int]
) -> tuple[AgentMessageChunk, int]:
    taken: list[AgentMessage] = []
    total = 0
    for message in messages:
        message_bytes = size(message)
        if taken and (
            len(taken) >= limits.chunk_size or total + message_bytes > limits.chunk_max_bytes
        ):
            break
        taken.append(message)
        total += message_bytes
    return AgentMessageChunk(first_sequence=taken[0].sequence, messages=tuple(taken)), total


def plan_append(
    window: Sequence[AgentMessage],
    index: AgentMessageIndex | None,
    new: Sequence[AgentMessage],
    limits: StorageLimits,
    size: Callable[[AgentMessage], int] = encoded_size,
) -> StoragePlan:
    """Plan the commit that stores ``new`` after the current ``window``.

    A message larger than ``chunk_max_bytes`` skips the window: the window moves into
    chunks and the message gets a chunk of its own, so an oversized message fails the
    Step that stores it rather than a later rollover.
    """
    current = sorted(window, key=lambda message: message.sequence)
    writes: list[AgentMessage] = []
    deletes: list[int] = []
    chunks: list[AgentMessageChunk] = []
    refs = list(index.chunks) if index is not None else []
    pending = [*current]
    for message in new:
        if size(message) > limits.chunk_max_bytes:
            while pending:
                chunk, _ = _take_chunk(pending, limits, size)
                chunks.append(chunk)
                pending = pending[len(chunk.messages) :]
            chunks.append(AgentMessageChunk(first_sequence=message.sequence, messages=(message,)))
        else:
            pending.append(message)
            writes.append(message)
    moved_bytes = 0
    while (
        len(pending) > limits.window_size
        and len(chunks) < limits.max_chunks_per_commit
        and moved_bytes < limits.max_bytes_per_commit
    ):
        chunk, chunk_bytes = _take_chunk(pending[: len(pending) - limits.window_size], limits, size)
        if chunks and moved_bytes + chunk_bytes > limits.max_bytes_per_commit:
            break
        chunks.append(chunk)
        moved_bytes += chunk_bytes
        pending = pending[len(chunk.messages) :]
    if not chunks:
        return StoragePlan(window_writes=tuple(writes))
    moved = {m.sequence for chunk in chunks for m in chunk.messages}
    kept_writes = tuple(m for m in writes if m.sequence not in moved)
    deletes = [m.sequence for m in current if m.sequence in moved]
    refs.extend(
        MessageChunkRef(
            first_sequence=chunk.first_sequence, last_sequence=chunk.messages[-1].sequence
        )
        for chunk in chunks
    )
    window_first = pending[0].sequence if pending else max(moved) + 1
    first = refs[0].first_sequence if refs else window_first
    base = index if index is not None else AgentMessageIndex()
    new_index = replace(
        base,
        chunks=tuple(refs),
        window_first_sequence=window_first,
        first_sequence=min(first, base.first_sequence) if index is not None else first,
    )
    return StoragePlan(
        window_writes=kept_writes,
        window_deletes=tuple(deletes),
        chunk_writes=tuple(chunks),
        index=new_index,
    )
