"""The verl side of wrl jobs: the agent loop verl loads from a lowered job's agent_loops.yaml.

A job written by `wrlc lower --to verl` names three things from this package:

- ``wrl_verl.agent_loop.WrlAgentLoop``: drives whole episodes through ``wrlc env serve`` and
  returns verl's ``AgentLoopOutput`` (assistant tokens trained, observations masked, the reward
  and failure class the env service computed with the recipe's reward);
- ``wrl_verl.tools.WrlTool``: carries the recipe's tool schemas for the chat template;
- ``pkg://wrl_verl.reward`` (``compute_score``): the reward entry point, for samples whose
  reward the agent loop did not set.
"""

__version__ = "0.1.0"
