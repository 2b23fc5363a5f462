"""The Worker child of the loop's integration tests."""

from loop_agent import build_flow

from dex_agents.testing import run_agent_worker

if __name__ == "__main__":
    run_agent_worker([build_flow()])
