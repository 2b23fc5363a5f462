"""``dex-agents chat``: one durable session in the terminal, with a Worker in this process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import dex

from dex_agents import (
    AgentEvent,
    AgentEventType,
    AgentInterrupt,
    AgentSessionClient,
    AgentSessionFlow,
    AgentSnapshot,
    InterruptKind,
    MessageRole,
)
from dex_agents._wire import WireError, loads
from dex_agents.cli._demo import build_chat_flow
from dex_agents.cli._terminal import Terminal
from dex_agents.engine import Durability, EngineConfig, LocalEngine

__all__ = ["ChatOptions", "ChatState", "chat", "connect"]

_POLL_SECONDS = 0.2
_PROGRESS_SECONDS = 5.0


@dataclass
class ChatOptions:
    """How ``dex-agents chat`` runs."""

    data_dir: Path
    server: str | None = None
    model: str | None = None
    resume: str | None = None


@dataclass
class ChatState:
    """What a Ctrl+C handler needs to tell the user."""

    session_id: str | None = None
    stream_token: str = ""
    printed: set[str] = field(default_factory=set)


@contextlib.asynccontextmanager
async def connect(
    options: ChatOptions, flows: list[dex.Flow[str]], *, with_worker: bool
) -> AsyncIterator[dex.AsyncClient]:
    """An engine (embedded unless ``--server``), optionally a Worker, and a Client."""
    options.data_dir.mkdir(parents=True, exist_ok=True)
    engine: LocalEngine | None = None
    worker: dex.AsyncWorker | None = None
    running: asyncio.Task[None] | None = None
    registry = dex.Registry(flows, allow_async_handlers=True)
    cache = dex.open_blob_cache(
        dex.BlobCacheConfig(directory=str(options.data_dir / "cache"), max_bytes=256 << 20)
    )
    try:
        address = options.server
        if address is None:
            engine = LocalEngine(
                EngineConfig(data_dir=options.data_dir / "engine", durability=Durability.FSYNC)
            )
            address = await engine.start()
        if with_worker:
            worker = dex.AsyncWorker(
                registry,
                cache,
                dex.WorkerOptions(
                    server_address=address, pull=dex.PullWorkerOptions(max_concurrent_tasks=8)
                ),
            )
            running = asyncio.create_task(worker.start())
            await worker.wait_pull_registered(timeout=30)
        client = dex.AsyncClient(
            registry,
            cache,
            dex.ClientOptions(server_address=address, worker_target=dex.WorkerTarget(pull=True)),
        )
        try:
            yield client
        finally:
            await client.close()
    finally:
        if worker is not None and running is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(worker.stop(), 3)
            running.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await running
        if engine is not None:
            await engine.stop(grace=0.5)
        cache.close()


async def chat(options: ChatOptions, state: ChatState, terminal: Terminal) -> int:
    """Run the chat until the user quits; return the exit status."""
    flow = build_chat_flow(options.data_dir, options.model)
    async with connect(options, [flow], with_worker=True) as client:
        sessions = AgentSessionClient(client, flow)
        started = False
        if options.resume is not None:
            try:
                await client.describe_flow(options.resume)
            except dex.FlowNotFoundError:
                raise RuntimeError(f"there is no session {options.resume!r}") from None
            state.session_id = options.resume
            started = True
            snapshot = await sessions.get_agent_snapshot(options.resume)
            _show_messages(terminal, snapshot, after=0)
            terminal.say("--- end of history ---")
            state.stream_token = await _stream_tail(client, flow, options.resume)
            if snapshot.state is not None and snapshot.state.active_turn_id is not None:
                terminal.say("(the last turn was still running; it continues now)")
                shown = snapshot.messages[-1].sequence if snapshot.messages else 0
                await _follow_turn(
                    sessions, client, flow, state, terminal, snapshot.state.turn_count - 1
                )
                # Whatever the turn stored before its events could be shown live.
                _show_messages(terminal, await sessions.get_agent_snapshot(options.resume), shown)
        else:
            state.session_id = f"chat-{uuid.uuid4().hex[:8]}"
        terminal.say(
            f"Session {state.session_id}. Type a message; /quit or Ctrl+D to leave. "
            "Ctrl+C leaves the session resumable."
        )
        while True:
            text = await terminal.ask("you> ")
            if text is None or text.strip() in ("/quit", "/exit"):
                break
            if not text.strip():
                continue
            turns = await _turn_count(sessions, state.session_id) if started else 0
            if started:
                await sessions.send_user_message(state.session_id, text)
            else:
                await sessions.start_session(state.session_id, text)
                started = True
            await _follow_turn(sessions, client, flow, state, terminal, turns)
        terminal.say(f"Bye. Resume with: dex-agents chat --resume {state.session_id}")
    return 0


async def _turn_count(sessions: AgentSessionClient, session_id: str) -> int:
    snapshot = await sessions.get_agent_snapshot(session_id)
    return snapshot.state.turn_count if snapshot.state is not None else 0


def _show_messages(terminal: Terminal, snapshot: AgentSnapshot, after: int) -> None:
    """Print the stored messages after sequence ``after`` (``0``: the history header too)."""
    if after == 0:
        terminal.say("--- history ---")
    for message in snapshot.messages:
        if message.sequence <= after:
            continue
        if message.role is MessageRole.USER:
            terminal.say(f"you> {message.text}")
        elif message.role is MessageRole.TOOL:
            terminal.say(f"  [tool] {message.tool_name}: {message.text}")
        elif message.text:
            terminal.say(f"agent> {message.text}")


async def _stream_tail(client: dex.AsyncClient, flow: AgentSessionFlow, session_id: str) -> str:
    """The resume token of the newest event, so only new events are shown."""
    page = await client.list_stream_messages(session_id, flow.events, 1)
    return page.messages[0].resume_token if page.messages else ""


async def _follow_turn(
    sessions: AgentSessionClient,
    client: dex.AsyncClient,
    flow: AgentSessionFlow,
    state: ChatState,
    terminal: Terminal,
    turns_before: int,
) -> None:
    """Show the turn's events live and prompt for its approvals and questions."""
    assert state.session_id is not None
    session_id = state.session_id
    printer = asyncio.create_task(_print_events(client, flow, state, terminal))
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    try:
        while True:
            snapshot = await sessions.get_agent_snapshot(session_id)
            current = snapshot.state
            if (
                current is not None
                and current.turn_count > turns_before
                and current.active_turn_id is None
            ):
                break
            if snapshot.pending_interrupts:
                await _resolve(sessions, session_id, snapshot.pending_interrupts[0], terminal)
                quiet_since = loop.time()
                continue
            if loop.time() - quiet_since > _PROGRESS_SECONDS:
                terminal.say("  ... still working")
                quiet_since = loop.time()
            await asyncio.sleep(_POLL_SECONDS)
        await asyncio.sleep(_POLL_SECONDS)
    finally:
        printer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await printer
    terminal.say("")
    if current.last_turn_error:
        terminal.say(f"  [turn failed] {current.last_turn_error}")


async def _print_events(
    client: dex.AsyncClient, flow: AgentSessionFlow, state: ChatState, terminal: Terminal
) -> None:
    assert state.session_id is not None
    speaking = False
    while True:
        try:
            message = await client.read_stream(
                state.session_id, flow.events, state.stream_token, timedelta(seconds=10)
            )
        except dex.LongPollTimeoutError:
            continue
        state.stream_token = message.resume_token
        try:
            event = loads(AgentEvent, message.value)
        except WireError:
            continue
        data = event.data
        if event.type is AgentEventType.TEXT_DELTA:
            if not speaking:
                terminal.write("agent> ")
                speaking = True
            terminal.write(str(data.get("text", "")))
            continue
        if speaking:
            terminal.say("")
            speaking = False
        if event.type is AgentEventType.TOOL_CALL_STARTED:
            terminal.say(f"  [tool] {data.get('tool_name')} started")
        elif event.type is AgentEventType.TOOL_CALL_FINISHED:
            terminal.say(f"  [tool] {data.get('tool_name')} {data.get('status')}")
        elif event.type is AgentEventType.TIMER_STARTED:
            terminal.say(f"  [wait] until {data.get('wait_until')} ({data.get('reason')})")


async def _resolve(
    sessions: AgentSessionClient, session_id: str, interrupt: AgentInterrupt, terminal: Terminal
) -> None:
    if interrupt.kind is InterruptKind.APPROVAL:
        arguments = interrupt.arguments or "{}"
        with contextlib.suppress(ValueError):
            arguments = json.dumps(json.loads(arguments), ensure_ascii=False)
        while True:
            answer = await terminal.ask(f"  Approve {interrupt.tool_name} {arguments}? [y/n] ")
            if answer is None:
                return
            if answer.strip().lower() in ("y", "yes", "n", "no"):
                break
        approved = answer.strip().lower() in ("y", "yes")
        await sessions.resolve_interrupt(
            session_id,
            interrupt.interrupt_id,
            approved=approved,
            rejection_message=None if approved else "The user said no.",
        )
        return
    choices = f" [{'/'.join(interrupt.choices)}]" if interrupt.choices else ""
    while True:
        answer = await terminal.ask(f"  {interrupt.question}{choices} > ")
        if answer is None:
            return
        if await sessions.answer_question(session_id, interrupt.interrupt_id, answer):
            return
        terminal.say("  That answer is not allowed here.")
