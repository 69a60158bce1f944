"""``harnesslab mcp``: one scenario variant's world behind the MCP tool server
(``adapters.mcp_app``), its tool runs written to a record in the usual format."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnesslab.adapters.mcp_app import ToolSession
from harnesslab.record.writer import RecordWriter
from harnesslab.run.doors import ToolDoor
from harnesslab.run.runner import open_record
from harnesslab.scenario.schema import Scenario, Variant
from harnesslab.scenario.settings import resolve_settings
from harnesslab.sim.tools import toolbox_for


def scenario_session(sc: Scenario, variant: Variant, *, seed: int = 0, source: Path | None = None,
                     cli_set: Mapping[str, Any] | None = None,
                     record: Path | None = None) -> tuple[ToolSession, RecordWriter]:
    """A standalone session over one scenario variant's world (``harnesslab mcp``): the
    scenario's verified user, the variant's identity setting, tool runs recorded to ``record``.
    The world's clock stands at the scenario's start."""
    settings = resolve_settings(sc, variant, cli_set)
    world = sc.make_world(settings.tools)
    writer = open_record(sc, variant, seed, source, settings, world, record, mcp_session=1)
    door = ToolDoor(toolbox_for(world, seed), writer, sc.session.user)
    return ToolSession(sc.session.user, door, settings.harness.identity, writer,
                       after=writer.flush), writer
