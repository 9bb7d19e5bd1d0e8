"""The recipe's tools as verl ``BaseTool`` entries of a job's tools.yaml.

They carry the typed schemas to the chat template (verl passes ``tools`` to the agent loop). They
are not executed by verl: a browser episode lives across turns, while verl's ToolAgentLoop calls
a tool's create/execute/release around every single call, so the wrl agent loop sends each turn
to ``wrlc env serve`` instead, which checks the calls against the same schemas and runs them.
"""

from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse


class WrlTool(BaseTool):
    """A tool of the recipe's tool set; calls run in the env service, not here."""

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        text = (
            f"`{self.name}` runs in `wrlc env serve`: use the wrl agent loop "
            "(wrl_verl.agent_loop.WrlAgentLoop), not verl's tool_agent, for wrl recipes"
        )
        return ToolResponse(text=text), 0.0, {}
