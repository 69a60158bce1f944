"""The real Codex CLI under the bench: ``harness=codex-cli`` (the program is
``harnesslab/adapters/codex_program.py``, standard library only; its docstring says what it
configures and which arguments it takes). Kept here so that a checkout's
``cmd:"python examples/codex_agent.py ARGS"`` runs it too:

    harnesslab run followup-o1001-zh --set harness=codex-cli --set turn_timeout=300
"""

import runpy

runpy.run_module("harnesslab.adapters.codex_program", run_name="__main__", alter_sys=True)
