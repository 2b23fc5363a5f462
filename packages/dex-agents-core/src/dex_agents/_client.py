"""``AgentSessionClient``: start sessions, send messages, resolve interrupts, read state."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace

import dex

from dex_agents._flow import AGENT_SESSION_ACTIVE_STEP_SEARCH_MODE, AgentSessionFlow
from dex_agents._interrupts import AnswerQuestionRequest, ResolveInterruptRequest
from dex_agents._messages import AgentUserMessage
from dex_agents._snapshot import AgentMessagesPage, AgentSnapshot, ListAgentMessagesRequest
from dex_agents._state import AgentSessionStartInput
from dex_agents._wire import dumps, loads

__all__ = ["AgentSessionClient"]

_LOCK_RETRY_SECONDS = 5.0


class AgentSessionClient:
    """Typed calls to the sessions of one ``AgentSessionFlow``.

    Args:
        client: A connected ``dex.AsyncClient`` whose Registry holds ``flow``.
        flow: The session Flow.
    """

    def __init__(self, client: dex.AsyncClient, flow: AgentSessionFlow) -> None:
        self.client = client
        self.flow = flow

    async def start_session(
        self,
        session_id: str,
        initial_message: str | None = None,
        *,
        session_settings: Mapping[str, object] | None = None,
        start_environment: Mapping[str, str] | None = None,
        options: dex.StartFlowOptions | None = None,
    ) -> str:
        """Start a session, searchable by the Steps it waits in; return the run id.

        Raises:
            ValueError: ``session_id`` is blank or contains ``/``, ``$`` or ``:``.
        """
        if not session_id.strip() or any(char in session_id for char in "/$:"):
            raise ValueError("session ids are non-blank and contain no '/', '$' or ':'")
        start = AgentSessionStartInput(
            initial_message=initial_message,
            session_settings=dict(session_settings) if session_settings is not None else None,
            start_environment=dict(start_environment) if start_environment is not None else None,
        )
        base = options or dex.StartFlowOptions()
        config = base.config_override or dex.FlowConfig()
        if config.active_step_search_mode is None:
            config = replace(config, active_step_search_mode=AGENT_SESSION_ACTIVE_STEP_SEARCH_MODE)
        return await self.client.start_flow(
            self.flow, session_id, dumps(start), replace(base, config_override=config)
        )

    async def send_user_message(
        self, session_id: str, text: str, *, plan_mode: bool = False
    ) -> bool:
        """Queue a message for the session; ``False`` (nothing sent) for blank text."""
        if not text.strip():
            return False
        message = AgentUserMessage(text=text, plan_mode=plan_mode)
        sent: bool = await self.client.invoke_rpc(
            self.flow.send_user_message, session_id, dumps(message)
        )
        return sent

    async def resolve_interrupt(
        self,
        session_id: str,
        interrupt_id: str,
        *,
        approved: bool,
        rejection_message: str | None = None,
    ) -> bool:
        """Approve or reject a tool call, or decline a question (``approved=False``)."""
        request = ResolveInterruptRequest(
            interrupt_id=interrupt_id, approved=approved, rejection_message=rejection_message
        )
        return await self._locked(self.flow.resolve_interrupt, session_id, dumps(request))

    async def answer_question(self, session_id: str, interrupt_id: str, answer: str) -> bool:
        """Answer a pending question; ``False`` for a blank or disallowed answer."""
        if not answer.strip():
            return False
        request = AnswerQuestionRequest(interrupt_id=interrupt_id, answer=answer)
        return await self._locked(self.flow.answer_question, session_id, dumps(request))

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        """The session's state, recent messages, interrupts, tool calls and usage."""
        text = await self.client.invoke_rpc(self.flow.get_agent_snapshot, session_id)
        return loads(AgentSnapshot, text)

    async def list_agent_messages(
        self, session_id: str, *, before_sequence: int | None = None, limit: int = 50
    ) -> AgentMessagesPage:
        """A page of stored messages, oldest first; page back with ``next_before_sequence``."""
        request = ListAgentMessagesRequest(before_sequence=before_sequence, limit=limit)
        text = await self.client.invoke_rpc(
            self.flow.list_agent_messages, session_id, dumps(request)
        )
        return loads(AgentMessagesPage, text)

    async def _locked(self, rpc: object, session_id: str, request: str) -> bool:
        """Call a locking RPC, retrying lock conflicts for up to five seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _LOCK_RETRY_SECONDS
        delay = 0.05
        while True:
            try:
                return bool(await self.client.invoke_rpc(rpc, session_id, request))  # type: ignore[call-overload]
            except dex.RpcLockConflictError:
                if loop.time() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
