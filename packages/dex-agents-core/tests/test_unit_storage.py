"""Unit tests of message storage (``dex_agents._storage``): the window and immutable chunks.

``hypothesis`` is not installed in this workspace, so the invariants run as deterministic
simulations: seeded scenarios apply every ``plan_append`` result to an in-memory model of
``AgentMessages``, ``AgentMessageChunks`` and ``AgentMessageIndex``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from dex_agents._messages import AgentMessage, MessageRole
from dex_agents._storage import (
    AgentMessageChunk,
    AgentMessageIndex,
    MessageChunkRef,
    StorageLimits,
    StoragePlan,
    encoded_size,
    next_sequence,
    plan_append,
)
from dex_agents._wire import dumps

MiB = 1024 * 1024

Size = Callable[[AgentMessage], int]


def msg(sequence: int, text: str | None = None) -> AgentMessage:
    return AgentMessage(
        sequence=sequence, role=MessageRole.USER, text=f"m{sequence}" if text is None else text
    )


def msgs(first: int, last: int) -> list[AgentMessage]:
    return [msg(sequence) for sequence in range(first, last + 1)]


def seqs(messages: Sequence[AgentMessage]) -> list[int]:
    return [message.sequence for message in messages]


def chunk_ranges(plan: StoragePlan) -> list[tuple[int, int]]:
    return [
        (chunk.messages[0].sequence, chunk.messages[-1].sequence) for chunk in plan.chunk_writes
    ]


def unit_size(_message: AgentMessage) -> int:
    return 1


def fixed_size(nbytes: int) -> Size:
    def size(_message: AgentMessage) -> int:
        return nbytes

    return size


def sizes_by_sequence(table: dict[int, int], default: int = 1) -> Size:
    def size(message: AgentMessage) -> int:
        return table.get(message.sequence, default)

    return size


# -- StorageLimits, AgentMessageIndex, encoded_size ----------------------------------------------


def test_storage_limit_defaults_match_the_spec() -> None:
    limits = StorageLimits()
    assert limits.window_size == 64
    assert limits.chunk_size == 32
    assert limits.chunk_max_bytes == MiB
    assert limits.max_chunks_per_commit == 4
    assert limits.max_bytes_per_commit == 8 * MiB


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window_size": 0}, "message_window_size and message_chunk_size must be at least 1"),
        ({"window_size": -1}, "message_window_size and message_chunk_size must be at least 1"),
        ({"chunk_size": 0}, "message_window_size and message_chunk_size must be at least 1"),
        ({"chunk_max_bytes": 0}, "message_chunk_max_bytes must be between 1 byte and 8 MiB"),
        (
            {"chunk_max_bytes": 8 * MiB + 1},
            "message_chunk_max_bytes must be between 1 byte and 8 MiB",
        ),
    ],
)
def test_storage_limits_reject(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StorageLimits(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window_size": 1, "chunk_size": 1, "chunk_max_bytes": 1},
        {"chunk_max_bytes": 8 * MiB},
    ],
)
def test_storage_limits_accept_the_boundaries(kwargs: dict[str, int]) -> None:
    StorageLimits(**kwargs)


def test_message_index_defaults() -> None:
    index = AgentMessageIndex()
    assert index.chunks == ()
    assert index.window_first_sequence == 1
    assert index.first_sequence == 1


@pytest.mark.parametrize("text", ["", "plain", "héllo ✓", "日本語" * 10])
def test_encoded_size_counts_utf8_bytes_of_the_stored_json(text: str) -> None:
    message = msg(1, text)
    assert encoded_size(message) == len(dumps(message).encode("utf-8"))
    assert encoded_size(msg(1, text + "é")) == encoded_size(message) + 2


# -- next_sequence -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "index", "expected"),
    [
        ([], None, 1),
        (msgs(1, 3), None, 4),
        ([msg(5), msg(3), msg(4)], None, 6),
        ([], AgentMessageIndex(), 1),
        (
            [],
            AgentMessageIndex(
                chunks=(MessageChunkRef(first_sequence=1, last_sequence=10),),
                window_first_sequence=11,
            ),
            11,
        ),
        (
            msgs(11, 12),
            AgentMessageIndex(
                chunks=(MessageChunkRef(first_sequence=1, last_sequence=10),),
                window_first_sequence=11,
            ),
            13,
        ),
        (
            msgs(41, 41),
            AgentMessageIndex(
                chunks=(
                    MessageChunkRef(first_sequence=1, last_sequence=32),
                    MessageChunkRef(first_sequence=33, last_sequence=40),
                ),
                window_first_sequence=41,
            ),
            42,
        ),
    ],
)
def test_next_sequence(
    window: list[AgentMessage], index: AgentMessageIndex | None, expected: int
) -> None:
    assert next_sequence(window, index) == expected


# -- plan_append: the window -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "new"),
    [
        ([], msgs(1, 1)),
        ([], msgs(1, 64)),
        (msgs(1, 63), msgs(64, 64)),
        (msgs(1, 10), msgs(11, 20)),
    ],
)
def test_append_within_the_window_writes_only_the_new_messages(
    window: list[AgentMessage], new: list[AgentMessage]
) -> None:
    plan = plan_append(window, None, new, StorageLimits())
    assert plan == StoragePlan(window_writes=tuple(new))


def test_append_without_chunks_keeps_an_existing_index_unchanged() -> None:
    index = AgentMessageIndex(
        chunks=(MessageChunkRef(first_sequence=1, last_sequence=1),), window_first_sequence=2
    )
    plan = plan_append(msgs(2, 10), index, msgs(11, 11), StorageLimits())
    assert plan.index is None
    assert plan.chunk_writes == ()
    assert plan.window_deletes == ()


def test_the_sixty_fifth_message_moves_the_oldest_into_a_chunk() -> None:
    window = msgs(1, 64)
    plan = plan_append(window, None, msgs(65, 65), StorageLimits())
    assert seqs(plan.window_writes) == [65]
    assert plan.window_deletes == (1,)
    assert plan.chunk_writes == (AgentMessageChunk(first_sequence=1, messages=(window[0],)),)
    assert plan.index == AgentMessageIndex(
        chunks=(MessageChunkRef(first_sequence=1, last_sequence=1),),
        window_first_sequence=2,
        first_sequence=1,
    )


def test_a_chunk_holds_at_most_chunk_size_messages() -> None:
    plan = plan_append(msgs(1, 64), None, msgs(65, 104), StorageLimits())
    assert chunk_ranges(plan) == [(1, 32), (33, 40)]
    assert plan.window_deletes == tuple(range(1, 41))
    assert seqs(plan.window_writes) == list(range(65, 105))
    assert plan.index is not None
    assert plan.index.window_first_sequence == 41
    for chunk in plan.chunk_writes:
        assert chunk.first_sequence == chunk.messages[0].sequence


def test_new_messages_can_move_into_chunks_in_the_commit_that_stores_them() -> None:
    plan = plan_append([], None, msgs(1, 100), StorageLimits())
    assert chunk_ranges(plan) == [(1, 32), (33, 36)]
    assert plan.window_deletes == ()
    assert seqs(plan.window_writes) == list(range(37, 101))
    assert plan.index == AgentMessageIndex(
        chunks=(
            MessageChunkRef(first_sequence=1, last_sequence=32),
            MessageChunkRef(first_sequence=33, last_sequence=36),
        ),
        window_first_sequence=37,
        first_sequence=1,
    )


def test_the_window_order_given_does_not_matter() -> None:
    window = msgs(1, 70)
    limits = StorageLimits()
    assert plan_append(window[::-1], None, msgs(71, 72), limits) == plan_append(
        window, None, msgs(71, 72), limits
    )


def test_an_existing_index_gets_the_new_chunks_appended() -> None:
    index = AgentMessageIndex(
        chunks=(MessageChunkRef(first_sequence=1, last_sequence=32),),
        window_first_sequence=33,
        first_sequence=1,
    )
    plan = plan_append(msgs(33, 96), index, msgs(97, 97), StorageLimits())
    assert plan.index == AgentMessageIndex(
        chunks=(
            MessageChunkRef(first_sequence=1, last_sequence=32),
            MessageChunkRef(first_sequence=33, last_sequence=33),
        ),
        window_first_sequence=34,
        first_sequence=1,
    )


def test_an_index_keeps_its_first_sequence_after_retention_deleted_older_chunks() -> None:
    index = AgentMessageIndex(
        chunks=(MessageChunkRef(first_sequence=33, last_sequence=64),),
        window_first_sequence=65,
        first_sequence=33,
    )
    plan = plan_append(msgs(65, 128), index, msgs(129, 129), StorageLimits())
    assert plan.index is not None
    assert plan.index.first_sequence == 33
    assert plan.index.chunks[0] == MessageChunkRef(first_sequence=33, last_sequence=64)


# -- plan_append: per-commit limits ----------------------------------------------------------------


def test_a_legacy_window_moves_at_most_four_chunks_per_commit() -> None:
    # A 0.1.0 session: every message in AgentMessages and no index.
    window = msgs(1, 300)
    plan = plan_append(window, None, msgs(301, 301), StorageLimits())
    assert chunk_ranges(plan) == [(1, 32), (33, 64), (65, 96), (97, 128)]
    assert plan.window_deletes == tuple(range(1, 129))
    assert plan.index is not None
    assert plan.index.window_first_sequence == 129


def test_a_legacy_window_leaves_over_several_commits() -> None:
    limits = StorageLimits()
    window = msgs(1, 300)
    index: AgentMessageIndex | None = None
    sizes_after = []
    for _ in range(3):
        new = [msg(next_sequence(window, index))]
        plan = plan_append(window, index, new, limits)
        deleted = set(plan.window_deletes)
        window = [m for m in window if m.sequence not in deleted] + list(plan.window_writes)
        index = plan.index or index
        sizes_after.append(len(window))
    assert sizes_after == [173, 64, 64]


@pytest.mark.parametrize(
    ("nbytes", "chunk_max_bytes", "per_chunk"),
    [(40, 100, 2), (50, 100, 2), (51, 100, 1), (10, 100, 10), (1, 100, 32)],
)
def test_a_chunk_holds_at_most_chunk_max_bytes(
    nbytes: int, chunk_max_bytes: int, per_chunk: int
) -> None:
    limits = StorageLimits(window_size=1, chunk_max_bytes=chunk_max_bytes)
    plan = plan_append(msgs(1, 40), None, [], limits, fixed_size(nbytes))
    assert plan.chunk_writes
    assert len(plan.chunk_writes[0].messages) == per_chunk
    for chunk in plan.chunk_writes:
        assert len(chunk.messages) * nbytes <= chunk_max_bytes


def test_a_commit_stops_moving_chunks_at_the_byte_budget() -> None:
    limits = StorageLimits(
        window_size=1, chunk_size=1, chunk_max_bytes=2 * MiB, max_chunks_per_commit=10
    )
    plan = plan_append(msgs(1, 20), None, msgs(21, 21), limits, fixed_size(2 * MiB))
    assert chunk_ranges(plan) == [(1, 1), (2, 2), (3, 3), (4, 4)]  # 8 MiB


def test_a_commit_never_moves_more_than_the_byte_budget() -> None:
    limits = StorageLimits(window_size=1, chunk_size=1, chunk_max_bytes=3 * MiB)
    size = fixed_size(3 * MiB)
    plan = plan_append(msgs(1, 10), None, msgs(11, 11), limits, size)
    moved = sum(size(m) for chunk in plan.chunk_writes for m in chunk.messages)
    assert moved <= limits.max_bytes_per_commit


# -- plan_append: a message larger than a chunk --------------------------------------------------


def test_an_oversized_message_flushes_the_window_and_gets_its_own_chunk() -> None:
    limits = StorageLimits(chunk_max_bytes=100)
    window = msgs(1, 3)
    big = msg(4)
    plan = plan_append(window, None, [big], limits, sizes_by_sequence({4: 101}))
    assert plan.chunk_writes == (
        AgentMessageChunk(first_sequence=1, messages=tuple(window)),
        AgentMessageChunk(first_sequence=4, messages=(big,)),
    )
    assert plan.window_writes == ()
    assert plan.window_deletes == (1, 2, 3)
    assert plan.index == AgentMessageIndex(
        chunks=(
            MessageChunkRef(first_sequence=1, last_sequence=3),
            MessageChunkRef(first_sequence=4, last_sequence=4),
        ),
        window_first_sequence=5,
        first_sequence=1,
    )


def test_an_oversized_first_message_of_a_session() -> None:
    plan = plan_append([], None, [msg(1)], StorageLimits(chunk_max_bytes=10), fixed_size(11))
    assert plan.chunk_writes == (AgentMessageChunk(first_sequence=1, messages=(msg(1),)),)
    assert plan.window_writes == ()
    assert plan.window_deletes == ()
    assert plan.index == AgentMessageIndex(
        chunks=(MessageChunkRef(first_sequence=1, last_sequence=1),),
        window_first_sequence=2,
        first_sequence=1,
    )


def test_an_oversized_message_between_small_ones() -> None:
    limits = StorageLimits(chunk_max_bytes=100)
    plan = plan_append(msgs(1, 2), None, msgs(3, 6), limits, sizes_by_sequence({4: 500}))
    # 1, 2 (window) and 3 (new, before the big one) are flushed; 5 and 6 stay in the window.
    assert chunk_ranges(plan) == [(1, 3), (4, 4)]
    assert plan.window_deletes == (1, 2)
    assert seqs(plan.window_writes) == [5, 6]
    assert plan.index is not None
    assert plan.index.window_first_sequence == 5


def test_an_oversized_message_flush_respects_the_chunk_size() -> None:
    limits = StorageLimits(chunk_max_bytes=100)
    plan = plan_append(msgs(1, 40), None, msgs(41, 41), limits, sizes_by_sequence({41: 101}))
    assert chunk_ranges(plan) == [(1, 32), (33, 40), (41, 41)]


def test_two_oversized_messages_in_a_row_get_one_chunk_each() -> None:
    limits = StorageLimits(chunk_max_bytes=100)
    plan = plan_append(msgs(1, 1), None, msgs(2, 3), limits, sizes_by_sequence({2: 101, 3: 101}))
    assert chunk_ranges(plan) == [(1, 1), (2, 2), (3, 3)]
    assert plan.window_writes == ()
    assert plan.index is not None
    assert plan.index.window_first_sequence == 4


def test_a_message_of_exactly_chunk_max_bytes_stays_in_the_window() -> None:
    limits = StorageLimits(chunk_max_bytes=100)
    plan = plan_append(msgs(1, 3), None, msgs(4, 4), limits, fixed_size(100))
    assert plan == StoragePlan(window_writes=(msg(4),))


def test_an_oversized_message_by_its_real_encoded_size() -> None:
    limits = StorageLimits(chunk_max_bytes=400)
    small = msg(2, "short")
    big = msg(3, "x" * 1000)
    assert encoded_size(msg(1)) + encoded_size(small) <= 400 < encoded_size(big)
    plan = plan_append(msgs(1, 1), None, [small, big], limits)
    assert chunk_ranges(plan) == [(1, 2), (3, 3)]
    assert plan.chunk_writes[-1].messages == (big,)


# -- simulation: plan_append applied commit after commit ------------------------------------------


@dataclass
class StoreModel:
    """``AgentMessages``, ``AgentMessageChunks`` and ``AgentMessageIndex`` in memory."""

    limits: StorageLimits
    sizes: dict[int, int] = field(default_factory=dict)
    window: dict[int, AgentMessage] = field(default_factory=dict)
    chunks: dict[int, AgentMessageChunk] = field(default_factory=dict)
    index: AgentMessageIndex | None = None
    appended: list[AgentMessage] = field(default_factory=list)

    def size(self, message: AgentMessage) -> int:
        return self.sizes[message.sequence]

    def is_oversized(self, message: AgentMessage) -> bool:
        return self.size(message) > self.limits.chunk_max_bytes

    def seed_legacy_window(self, sizes: Sequence[int]) -> None:
        for sequence, nbytes in enumerate(sizes, start=1):
            self.sizes[sequence] = nbytes
            self.window[sequence] = msg(sequence)
            self.appended.append(self.window[sequence])

    def append(self, sizes: Sequence[int]) -> None:
        window = list(self.window.values())
        first = next_sequence(window, self.index)
        if self.appended:
            assert first == self.appended[-1].sequence + 1
        else:
            assert first == 1
        new = []
        for offset, nbytes in enumerate(sizes):
            self.sizes[first + offset] = nbytes
            new.append(msg(first + offset))
        before = len(self.window)
        plan = plan_append(window, self.index, new, self.limits, self.size)
        self.apply(plan, new)
        self.check_commit(plan, new, before)
        self.check_store()

    def apply(self, plan: StoragePlan, new: Sequence[AgentMessage]) -> None:
        new_sequences = {message.sequence for message in new}
        for sequence in plan.window_deletes:
            assert sequence in self.window
            assert sequence not in new_sequences
            del self.window[sequence]
        for message in plan.window_writes:
            assert message.sequence in new_sequences
            assert message.sequence not in self.window
            self.window[message.sequence] = message
        for chunk in plan.chunk_writes:
            assert chunk.first_sequence not in self.chunks, "a chunk is never rewritten"
            self.chunks[chunk.first_sequence] = chunk
        if plan.index is not None:
            self.index = plan.index
        self.appended.extend(new)

    def check_commit(self, plan: StoragePlan, new: Sequence[AgentMessage], before: int) -> None:
        limits = self.limits
        assert (plan.index is None) == (not plan.chunk_writes)
        if not plan.chunk_writes:
            assert plan.window_writes == tuple(new)
            assert plan.window_deletes == ()
        oversized = any(self.is_oversized(message) for message in new)
        moved_bytes = sum(self.size(m) for chunk in plan.chunk_writes for m in chunk.messages)
        at_limit = (
            len(plan.chunk_writes) >= limits.max_chunks_per_commit
            # The next chunk may not fit in what is left of the byte budget.
            or moved_bytes + limits.chunk_max_bytes > limits.max_bytes_per_commit
        )
        if not oversized:
            assert len(plan.chunk_writes) <= limits.max_chunks_per_commit
            if plan.chunk_writes:
                # Only the oldest messages beyond the window size move.
                assert len(self.window) >= limits.window_size
        # The window holds at most window_size, except what one commit could not move.
        assert len(self.window) <= limits.window_size or at_limit
        assert len(self.window) <= max(limits.window_size, before + len(new))

    def check_store(self) -> None:
        limits = self.limits
        ordered = [self.chunks[key] for key in sorted(self.chunks)]
        stored = [m for chunk in ordered for m in chunk.messages]
        stored.extend(self.window[key] for key in sorted(self.window))
        # Every message ever appended is stored exactly once, in order.
        assert stored == self.appended
        sequences = seqs(stored)
        assert sequences == list(range(1, len(stored) + 1))
        for chunk in ordered:
            assert chunk.first_sequence == chunk.messages[0].sequence
            assert 1 <= len(chunk.messages) <= limits.chunk_size
            chunk_bytes = sum(self.size(m) for m in chunk.messages)
            assert chunk_bytes <= limits.chunk_max_bytes or len(chunk.messages) == 1
        assert not any(self.is_oversized(m) for m in self.window.values())
        if not ordered:
            assert self.index is None
            return
        assert self.index is not None
        assert self.index.chunks == tuple(
            MessageChunkRef(first_sequence=c.first_sequence, last_sequence=c.messages[-1].sequence)
            for c in ordered
        )
        assert self.index.first_sequence == 1
        assert self.index.window_first_sequence == ordered[-1].messages[-1].sequence + 1
        if self.window:
            assert min(self.window) == self.index.window_first_sequence

    def drain(self) -> None:
        """Store one small message per commit until the window is back to its size."""
        for _ in range(len(self.window) + 1):
            if len(self.window) <= self.limits.window_size:
                return
            self.append([1])
        pytest.fail("the window never drained")


SIM_LIMITS = [
    StorageLimits(window_size=5, chunk_size=3, chunk_max_bytes=100),
    StorageLimits(window_size=4, chunk_size=2, chunk_max_bytes=100, max_chunks_per_commit=2),
    StorageLimits(
        window_size=3,
        chunk_size=4,
        chunk_max_bytes=100,
        max_chunks_per_commit=3,
        max_bytes_per_commit=150,
    ),
    StorageLimits(window_size=1, chunk_size=1, chunk_max_bytes=50, max_chunks_per_commit=2),
    StorageLimits(window_size=8, chunk_size=8, chunk_max_bytes=1000),
]


def random_sizes(rng: random.Random, count: int, chunk_max_bytes: int) -> list[int]:
    return [
        chunk_max_bytes + rng.randint(1, 50)
        if rng.random() < 0.05
        else rng.randint(1, chunk_max_bytes)
        for _ in range(count)
    ]


@pytest.mark.parametrize("seed", range(40))
def test_simulated_session_keeps_every_message_once_in_consecutive_chunks(seed: int) -> None:
    rng = random.Random(seed)
    limits = SIM_LIMITS[seed % len(SIM_LIMITS)]
    model = StoreModel(limits)
    if seed % 4 == 0:
        # A 0.1.0 session: a large window and no index.
        model.seed_legacy_window([rng.randint(1, limits.chunk_max_bytes) for _ in range(40)])
    for _ in range(60):
        model.append(random_sizes(rng, rng.randint(1, 12), limits.chunk_max_bytes))
    model.drain()


@pytest.mark.parametrize("limits", SIM_LIMITS)
@pytest.mark.parametrize(
    "batches",
    [
        [1] * 50,
        [2, 3] * 20,
        [40, 1, 1, 1, 1, 1, 1, 1, 1, 1],
        [7] * 12,
    ],
    ids=["singles", "pairs-and-triples", "burst-then-singles", "sevens"],
)
def test_simulated_batches_of_small_messages(limits: StorageLimits, batches: list[int]) -> None:
    model = StoreModel(limits)
    for count in batches:
        model.append([1] * count)
    model.drain()


def test_simulated_steady_state_stays_within_the_window() -> None:
    limits = StorageLimits()
    model = StoreModel(limits)
    for _ in range(200):
        model.append([10, 10, 10])
        assert len(model.window) <= limits.window_size
    assert len(model.appended) == 600
