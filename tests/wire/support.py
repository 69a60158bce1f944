"""A scenario's serve on a loopback port for a test, with its records folder."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harnesslab.bench.scenario import bundled_dir, load_scenario
from harnesslab.bench.serve import ScenarioServe

FOLLOWUP = bundled_dir() / "followup-o1001-zh.yaml"
Q1 = "帮我查订单 O-1001 为什么还没到，回答简单一点。"


@contextmanager
def serving(out: Path, *, scenario: Path = FOLLOWUP, variant: str = "default",
            cli_set: Mapping[str, Any] | None = None) -> Iterator[tuple[str, ScenarioServe]]:
    sc = load_scenario(scenario)
    v = next(x for x in sc.variants if x.name == variant)
    serve = ScenarioServe(sc, v, source=scenario, out_dir=out, cli_set=cli_set)
    server = serve.server().start()
    try:
        yield server.url, serve
    finally:
        server.stop()
        serve.close()
