"""``memory.mode: vector`` behind the AgentScope adapter: AgentScope's own ``Mem0Middleware``
over a local mem0 (``mem0ai``, the ``mem0`` extra), everything offline and deterministic.

- **mem0's LLM** is the bench's fake model: AgentScope's mem0 adapter (``AgentScopeLLM``) calls
  an AgentScope chat model, here a :class:`~harnesslab.adapters.agentscope_bridge.BenchModel`
  whose calls go to the session's endpoint with purpose ``memory`` (recorded as every other
  call; the simulated service still enforces the window).
- **Embeddings**: the bench's own hashed character n-gram embedder (``harness.memory.embed``,
  the reference harness's), as an AgentScope embedding model. Deterministic, offline, not a
  trained model: similarity is shared characters, not meaning.
- **Vector store**: mem0's default Qdrant in its local (embedded) mode, on disk in the run's
  workdir (``memory/mem0/qdrant``), with mem0's SQLite history beside it. One mem0 per run
  folder serves every session of the run (a local Qdrant folder admits one client at a time);
  each session's middleware is scoped by its own verified user.
- **Parameters** from the bench's memory settings: ``user_id`` the verified session user,
  ``agent_id`` = ``memory.agent_id``, ``top_k``, ``threshold``; mode ``static_control``
  (search before each reply, write-back after it, no memory tools: the reference's vector mode).
- **No network, no wall clock**: mem0's telemetry is off (``MEM0_TELEMETRY=False``) and its home
  folder a private temporary one (``MEM0_DIR``), both set before mem0 is imported; mem0's
  extraction prompt states today's date, which reads the simulated clock (as AgentScope's own
  time hint does, ``agentscope_bridge.install_sources``). spaCy is not installed, so mem0 skips
  its entity extraction (it would download a model).

``memory_read`` and ``memory_write`` events report what the middleware's searches returned and
what mem0 added, as the reference harness reports its own, read from the client's answers.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse

from harnesslab.harness.memory.embed import HashedNgramEmbedder

__all__ = ["MEM0_EXTRA", "BenchEmbedding", "Mem0Store", "mem0_store", "observed"]

MEM0_EXTRA = "memory vector needs the mem0 extra: pip install -e '.[agentscope,mem0]'"
DIM = 512


def _import_mem0() -> Any:
    # Before mem0's first import: no telemetry (network), no ~/.mem0 (its home, a private folder).
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    if "MEM0_DIR" not in os.environ:
        home = tempfile.mkdtemp(prefix="harnesslab-mem0-home-")
        os.environ["MEM0_DIR"] = home
        # Gone with the process: a mutation or sweep run imports mem0 in hundreds of workers.
        atexit.register(shutil.rmtree, home, True)
    try:
        import mem0
        import mem0.configs.prompts as prompts
    except ImportError:
        from harnesslab.errors import NotApplicable

        raise NotApplicable(MEM0_EXTRA) from None
    import logging

    from harnesslab.adapters.agentscope_bridge import _SimDatetime

    # mem0's log lines (a missing optional package, an unparsed answer) are the record's to show.
    logging.getLogger("mem0").setLevel(logging.CRITICAL)

    prompts.datetime = _SimDatetime  # "today" in mem0's extraction prompt: the simulated clock
    # Off even when mem0 was imported before (its switch is read at import): no event is sent
    # and no second, telemetry-only Qdrant is opened in mem0's home folder.
    import mem0.memory.main as main
    import mem0.memory.telemetry as telemetry

    main.MEM0_TELEMETRY = telemetry.MEM0_TELEMETRY = False
    return mem0


class BenchEmbedding(EmbeddingModelBase):  # type: ignore[misc]
    """The bench's hashed n-gram embedder as an AgentScope embedding model (module docstring)."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(credential=None, model="harnesslab-hashed-ngrams", dimensions=dim,
                         parameters=None, context_size=1 << 20, batch_size=1 << 20,
                         max_retries=0, retry_delay=0.0)
        self._embedder = HashedNgramEmbedder(dim)

    async def _call_api(self, inputs: list[Any], **kwargs: Any) -> Any:
        texts = [x if isinstance(x, str) else getattr(x, "text", str(x)) for x in inputs]
        return EmbeddingResponse(embeddings=[list(self._embedder.embed(t)) for t in texts])


class Mem0Store:
    """One local mem0 for a run folder, its chat model pointed at the session that uses it."""

    def __init__(self, root: Path, model: Any) -> None:
        mem0 = _import_mem0()
        from agentscope.middleware._longterm_memory._mem0._agentscope_adapter import (
            build_mem0_config,
        )
        from mem0.configs.base import MemoryConfig

        root.mkdir(parents=True, exist_ok=True)
        base = MemoryConfig(
            vector_store={"provider": "qdrant", "config": {
                "collection_name": "harnesslab", "path": str(root / "qdrant"),
                "embedding_model_dims": DIM, "on_disk": True}},
            history_db_path=str(root / "history.db"))
        self.model = model
        self.client = mem0.AsyncMemory(config=build_mem0_config(
            chat_model=model, embedding_model=BenchEmbedding(), mem0_config=base))
        # AgentScope's mem0 adapters each run an event loop on a thread of their own, for good;
        # stopped (and the local Qdrant closed) once no session holds this store.
        bridges = [b for o in (self.client.llm, self.client.embedding_model)
                   if (b := getattr(o, "_bridge", None)) is not None]
        weakref.finalize(self, _close, bridges, getattr(self.client, "vector_store", None))


def _close(bridges: list[Any], store: Any) -> None:
    for b in bridges:
        b._loop.call_soon_threadsafe(b._loop.stop)
    client = getattr(store, "client", None)
    if client is not None:
        with contextlib.suppress(Exception):
            client.close()


_STORES: weakref.WeakValueDictionary[str, Mem0Store] = weakref.WeakValueDictionary()


def mem0_store(root: Path, make_model: Callable[[], Any]) -> Mem0Store:
    """The run folder's mem0 (built on first use; dropped when no session holds it)."""
    key = str(root.resolve())
    store = _STORES.get(key)
    if store is None:
        store = Mem0Store(root, make_model())
        _STORES[key] = store
    return store


class _Observed:
    """A mem0 client passed through unchanged, telling the harness what each search returned
    and what each add wrote (``search`` and ``add`` stay coroutine functions, as the middleware
    requires)."""

    def __init__(self, client: Any, on_search: Callable[[str, dict[str, Any], Any], None],
                 on_add: Callable[[dict[str, Any], Any], None]) -> None:
        self._client = client
        self._on_search = on_search
        self._on_add = on_add

    async def search(self, query: str, **kwargs: Any) -> Any:
        raw = await self._client.search(query, **kwargs)
        self._on_search(query, kwargs, raw)
        return raw

    async def add(self, messages: Any, **kwargs: Any) -> Any:
        raw = await self._client.add(messages, **kwargs)
        self._on_add(kwargs, raw)
        return raw

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def observed(client: Any, on_search: Callable[[str, dict[str, Any], Any], None],
             on_add: Callable[[dict[str, Any], Any], None]) -> Any:
    return _Observed(client, on_search, on_add)
