"""A child process that runs one prompt with every tool allowed (killed by the crash tests).

Usage: ``python -m tests.core.agent.child_run WORKSPACE BASE_URL PROMPT``; prints the session path first.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx

from tiny_agent_core.agent.loop import Agent
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import AllowListApprover, ApprovalPolicy, ToolSettings
from tiny_agent_core.tools.registry import builtin_tools


async def main(workspace: Path, base_url: str, prompt: str) -> None:
    store = SessionStore.create(workspace, model="test-model", provider="custom")
    print(store.path, flush=True)
    async with ProviderClient(httpx.AsyncClient(trust_env=False)) as client:
        agent = Agent(
            store=store,
            client=client,
            profile=custom_profile(base_url),
            model="test-model",
            workspace=workspace,
            tools=builtin_tools(workspace),
            policy=ApprovalPolicy(ToolSettings.in_memory()),
            approver=AllowListApprover(["read", "write", "edit", "bash", "bg"]),
        )
        await agent.run(prompt)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
