"""The Worker child of the test kit's tests: ``python -m kit_worker`` in this folder."""

from kit_flows import build_flows

from dex_agents.testing import run_agent_worker

if __name__ == "__main__":
    run_agent_worker(build_flows())
