"""``dex-agents chat`` driven as a user would, through a pseudo-terminal."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pexpect
import pytest

TIMEOUT = 60


def _spawn(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "dex_agents.cli", *args, "--data-dir", str(data_dir)],
        env={**os.environ, **(env or {})},
        encoding="utf-8",
        timeout=TIMEOUT,
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "chat"


def _close(child: pexpect.spawn) -> None:
    if child.isalive():
        child.kill(signal.SIGKILL)
    child.close(force=True)


def _resume_and_finish(data_dir: Path, session_id: str, message: str, reply: str) -> None:
    """Resumes a session, sees ``message`` in its history and the turn finish with ``reply``."""
    resumed = _spawn(data_dir, "chat", "--resume", session_id)
    try:
        resumed.expect_exact("--- history ---")
        resumed.expect_exact(f"you> {message}")
        # The turn finishes: in the history already, or live right after it.
        resumed.expect_exact(reply)
        resumed.expect_exact("you> ")
        resumed.sendline("/quit")
        resumed.expect(pexpect.EOF)
    finally:
        _close(resumed)


def test_a_first_chat_runs_tools_and_asks_before_a_write(data_dir: Path) -> None:
    child = _spawn(data_dir, "chat")
    try:
        child.expect(r"Session (chat-[0-9a-f]+)\.")
        child.expect_exact("you> ")
        child.sendline("save groceries: milk, eggs")
        child.expect_exact("agent> Saving it.")
        child.expect_exact("[tool] save_note succeeded")
        child.expect_exact("Done: saved note groceries")
        child.expect_exact("you> ")
        child.sendline("postcard to Ana: hello")
        child.expect(r"Approve send_postcard \{\"to\": \"Ana\", \"text\": \"hello\"\}\? \[y/n\] ")
        child.sendline("y")
        child.expect_exact("Done: sent a postcard to Ana")
        child.expect_exact("you> ")
        child.sendline("ask me")
        child.expect_exact("Tea or coffee? [tea/coffee] > ")
        child.sendline("juice")
        child.expect_exact("That answer is not allowed here.")
        child.expect_exact("Tea or coffee? [tea/coffee] > ")
        child.sendline("tea")
        child.expect_exact('Done: {"status":"answered","answer":"tea"}')
        child.expect_exact("you> ")
        child.sendline("/quit")
        child.expect_exact("Bye.")
        child.expect(pexpect.EOF)
    finally:
        _close(child)
    assert (data_dir / "notes" / "groceries.txt").read_text() == "milk, eggs"
    assert len((data_dir / "postcards.log").read_text().splitlines()) == 1


def test_a_killed_chat_resumes_with_its_history_and_never_repeats_the_write(
    data_dir: Path,
) -> None:
    slow = {"DEX_AGENTS_DEMO_POSTCARD_SECONDS": "30"}
    child = _spawn(data_dir, "chat", env=slow)
    try:
        child.expect(r"Session (chat-[0-9a-f]+)\.")
        session_id = child.match.group(1)
        child.expect_exact("you> ")
        child.sendline("postcard to Bo: hi")
        child.expect_exact("Approve send_postcard")
        child.sendline("y")
        child.expect_exact("[tool] send_postcard started")
        log = data_dir / "postcards.log"
        for _ in range(200):
            if log.exists() and "to Bo" in log.read_text():
                break
            child.expect(pexpect.TIMEOUT, timeout=0.05)
        # The postcard went out; the process dies before its result is recorded.
        child.kill(signal.SIGKILL)
    finally:
        _close(child)
    _resume_and_finish(
        data_dir, session_id, "postcard to Bo: hi", "Done: The tool call's outcome is unknown"
    )
    assert len([line for line in log.read_text().splitlines() if "to Bo" in line]) == 1
    listing = _spawn(data_dir, "sessions")
    try:
        listing.expect(re.escape(session_id) + r"\s+\S+ \S+\s+waiting for a message")
        listing.expect(pexpect.EOF)
    finally:
        _close(listing)


def test_errors_are_one_line(data_dir: Path) -> None:
    child = _spawn(data_dir, "chat", "--resume", "no-such-session")
    try:
        child.expect(pexpect.EOF)
        output = (child.before or "").strip()
        assert output == "dex-agents: there is no session 'no-such-session'", output
    finally:
        _close(child)


def test_ctrl_c_during_a_turn_leaves_the_session_resumable(data_dir: Path) -> None:
    child = _spawn(data_dir, "chat")
    try:
        child.expect(r"Session (chat-[0-9a-f]+)\.")
        session_id = child.match.group(1)
        child.expect_exact("you> ")
        child.sendline("wait 3")
        child.expect_exact("[wait] until")
        child.sendintr()
        child.expect_exact(f"Session {session_id} is saved; resume it with:")
        child.expect(pexpect.EOF)
    finally:
        _close(child)
    _resume_and_finish(data_dir, session_id, "wait 3", "Done: {")


def test_model_chooses_the_litellm_client(tmp_path: Path) -> None:
    from dex_agents.builtin_loop import BuiltinLoopAgentRunner
    from dex_agents.cli._demo import build_chat_flow
    from dex_agents.litellm import LiteLLMModelClient

    flow = build_chat_flow(tmp_path, "anthropic/claude-sonnet-4-5")
    assert isinstance(flow.runner, BuiltinLoopAgentRunner)
    assert isinstance(flow.runner.definition.model, LiteLLMModelClient)
