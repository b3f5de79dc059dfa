"""``Agent``: a name, instructions, a model and the tools the model may call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from histcore.engine.wording import a_type_name
from histcore.exceptions import UserError
from histcore.runner.models.interface import Model
from histcore.runner.tool import FunctionTool

__all__ = ["Agent"]


@dataclass(frozen=True)
class Agent:
    """What the runner drives.

    ``model`` is a ``Model`` or a model name for the OpenAI Responses API (needs the
    ``histcore[openai]`` extra and ``OPENAI_API_KEY``); ``RunConfig.model`` overrides
    it. Tool names must be unique. The agent is immutable: use
    ``dataclasses.replace(agent, ...)`` for a variant.
    """

    name: str
    instructions: str | None = None
    model: Model | str | None = None
    tools: Sequence[FunctionTool] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise UserError(f"Agent name must be a non-empty str, not {self.name!r}")
        if self.instructions is not None and not isinstance(self.instructions, str):
            raise UserError(
                f"Agent {self.name!r}: instructions must be a str or None, "
                f"not {type(self.instructions).__name__}"
            )
        if self.model is not None and not isinstance(self.model, (str, Model)):
            raise UserError(
                f"Agent {self.name!r}: model must be a Model or a model name, "
                f"not {type(self.model).__name__}"
            )
        if isinstance(self.tools, (str, bytes)) or not isinstance(self.tools, Sequence):
            raise UserError(f"Agent {self.name!r}: tools must be a sequence of FunctionTool")
        seen: set[str] = set()
        for index, tool in enumerate(self.tools):
            if not isinstance(tool, FunctionTool):
                raise UserError(
                    f"Agent {self.name!r}: tools[{index}] is {a_type_name(tool)}, "
                    "not a FunctionTool (decorate the function with @function_tool)"
                )
            if tool.name in seen:
                raise UserError(f"Agent {self.name!r}: two tools are named {tool.name!r}")
            seen.add(tool.name)
        # A tuple, so the agent's tool list cannot change under a running loop.
        object.__setattr__(self, "tools", tuple(self.tools))

    def get_tool(self, name: str) -> FunctionTool | None:
        """The tool called ``name``, or None."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None
