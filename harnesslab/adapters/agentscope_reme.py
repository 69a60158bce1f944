"""``memory.mode: workspace`` behind the AgentScope adapter: AgentScope's own ``ReMeMiddleware``
over its embedded ReMe app (``reme-ai``, the ``reme`` extra), offline and deterministic.

What AgentScope does (``agentscope/middleware/_longterm_memory/_reme/_middleware.py``), in its
default mode ``both`` (the reference's workspace mode too: injection and a ``memory_search``
tool): ``on_system_prompt`` appends a note on the ``memory_search`` tool, ``on_reply`` starts a
``search`` job over the workspace as a task and ``on_reasoning`` appends the memories it found
as a hint message once that task is done; after
the reply, ``on_reply`` awaits ReMe's ``auto_memory`` job, an internal AgentScope agent that
writes the exchange into a daily Markdown card with ReMe's file tools (``daily_write`` for a new
card, ``read`` / ``edit`` / ``write`` for the session's card of that day).

What the bench gives it:

- **The app's configuration** is AgentScope's own (``_build_reme_app_config``) with the two
  jobs that run on the host's time switched off through ReMe's documented job switch
  (``enabled: false``, ``Application._start_one`` skips them): ``index_update_loop`` (a polling
  file watcher with a wall-clock debounce) and ``dream_cron`` (the nightly consolidation at
  ``0 23 * * *`` host time). In the watcher's stead the adapter runs AgentScope's own
  ``reindex`` job of the same config after each write-back, so a card written in a turn is
  searchable from the next turn on (what the watcher does a few seconds later). No dream runs:
  the cards stay daily cards. The app's timezone is the session's zone (the day a card is filed
  under is the simulated day), its logs go nowhere, its internal agent's saved sessions are
  never expired (``session_retention_days: 0``: its clean-up compares file times with the host
  clock).
- **A workspace per (agent, verified session user)** in the run's workdir
  (``memory/reme/<agent>/<user>/``): ReMe's search has no user filter (it "runs over the whole
  workspace"), so the integrator's scoping is which workspace the user's agent is given.
- **The retrieval's timing**: the search task the middleware starts is awaited (by a watching
  middleware placed before it) before the first reasoning step, so ReMe's ``on_reasoning``
  always finds it done and injects it into the first call, in every run (the best case of
  ReMe's "best-effort" injection; on a real host a slow search misses single-call replies).
- **Its LLM** is the bench's endpoint (a :class:`~harnesslab.adapters.agentscope_bridge.
  BenchModel`, purpose ``memory``), injected as the middleware's ``chat_model``; its
  **embeddings** the bench's hashed n-gram embedder (``BenchEmbedding``, as for mem0).

What it does not do: patch ReMe's steps, rewrite its prompts, or filter its search.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentscope.middleware import MiddlewareBase
from agentscope.middleware._longterm_memory._reme._config import _build_reme_app_config
from agentscope.middleware._longterm_memory._reme._middleware import ReMeMiddleware

from harnesslab.adapters.agentscope_mem0 import DIM, BenchEmbedding
from harnesslab.harness.memory.items import safe_name

__all__ = ["REME_EXTRA", "BenchReMe", "ReMeWatch", "reme_workspace"]

REME_EXTRA = "memory workspace needs the reme extra: pip install -e '.[agentscope,reme]'"
# The jobs of AgentScope's embedded config switched off (module docstring): the two that run on
# the host's time, and the dream job the middleware never calls, whose pipeline names a step
# (dream_topics_step) that reme-ai 0.4.2.0 does not register, so the app would not start.
OFF_JOBS = ("index_update_loop", "dream_cron", "auto_dream")


def reme_workspace(workdir: Path, agent: str, user: str) -> Path:
    """One (agent, verified user)'s ReMe workspace in the run's workdir."""
    return workdir / "memory" / "reme" / safe_name(agent) / safe_name(user)


def import_reme() -> Any:
    try:
        import reme
    except ImportError:
        from harnesslab.errors import NotApplicable

        raise NotApplicable(REME_EXTRA) from None
    return reme


class BenchReMe(ReMeMiddleware):  # type: ignore[misc]
    """``ReMeMiddleware`` whose embedded app is built from AgentScope's own configuration with
    the host-timed jobs switched off and the session's zone (module docstring)."""

    def __init__(self, *, workspace_dir: str, timezone: str, chat_model: Any, top_k: int) -> None:
        import_reme()
        super().__init__(workspace_dir=workspace_dir, parameters=ReMeMiddleware.Parameters(
            chat_model=chat_model, embedding_model=BenchEmbedding(), mode="both",
            top_k=top_k))
        self._timezone = timezone

    def _build_app(self) -> Any:
        from reme import ReMe

        config = _build_reme_app_config(workspace_dir=self._workspace_dir,
                                        embedding_dimensions=DIM)
        for name in OFF_JOBS:
            config["jobs"][name]["enabled"] = False
        config["components"]["agent_wrapper"]["default"]["session_retention_days"] = 0
        config.update(timezone=self._timezone, log_to_file=False, log_to_console=False)
        return ReMe(**config)

    async def reindex(self) -> None:
        """What the switched-off watcher would do: make the workspace's cards searchable."""
        await self._run_job("reindex")


class ReMeWatch(MiddlewareBase):  # type: ignore[misc]
    """Placed before ``BenchReMe``: awaits the retrieval task ReMe's ``on_reply`` started
    before the first reasoning step (so ReMe's ``on_reasoning`` injects it there, in every
    run), reports what it found, and after the reply (write-back included) reindexes."""

    def __init__(self, reme: BenchReMe, on_found: Any, on_written: Any) -> None:
        self.reme = reme
        self.on_found = on_found
        self.on_written = on_written

    async def on_reply(self, agent: Any, input_kwargs: dict[str, Any],
                       next_handler: Any) -> Any:
        async for item in next_handler(**input_kwargs):
            yield item
        await self.reme.reindex()
        self.on_written()

    async def on_reasoning(self, agent: Any, input_kwargs: dict[str, Any],
                           next_handler: Any) -> Any:
        task = self.reme._retrieval_tasks.get(self.reme._session_id_of(agent))
        if task is not None:
            await asyncio.wait({task})
            if not task.cancelled() and task.exception() is None:
                self.on_found(task.result())
        async for event in next_handler(**input_kwargs):
            yield event
