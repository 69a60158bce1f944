"""The wire's subcommands (``harnesslab serve``), kept out of ``cli.py`` so it stays small."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harnesslab.errors import InputError

if TYPE_CHECKING:
    from harnesslab.bench.scenario import Scenario, Variant


def scenario_file(raw: str) -> Path:
    """A scenario file, or the id of a bundled one."""
    from harnesslab.bench.scenario import bundled_dir

    p = Path(raw)
    if p.is_file():
        return p
    bundled = bundled_dir() / f"{raw}.yaml"
    if bundled.is_file():
        return bundled
    raise InputError("no such scenario file or bundled scenario id", file=raw, field="SCENARIO")


def scenario_variant(raw: str, name: str | None) -> tuple[Path, Scenario, Variant]:
    """The scenario (a file or a bundled id) and its variant ``name`` (default: 'default',
    else the first)."""
    from harnesslab.bench.scenario import load_scenario

    path = scenario_file(raw)
    sc = load_scenario(path)
    names = [v.name for v in sc.variants]
    name = name or ("default" if "default" in names else names[0])
    if name not in names:
        raise InputError(f"no variant {name!r}; expected one of {', '.join(names)}",
                         file=str(path), field="--variant")
    return path, sc, next(v for v in sc.variants if v.name == name)


def _cmd_serve(args: argparse.Namespace) -> int:
    from harnesslab.cli import _parse_sets, _run_dir

    path, sc, variant = scenario_variant(args.scenario, args.variant)
    name = variant.name
    cli_set = _parse_sets(args.set)
    out, _ = _run_dir(args.out)
    try:
        from harnesslab.bench.serve import ScenarioServe

        serve = ScenarioServe(sc, variant, seed=args.seed, source=path, out_dir=out,
                              cli_set=cli_set)
        server = serve.server(args.host, args.port)
    except ImportError as e:
        raise InputError(str(e), field="serve") from None
    except OSError as e:
        raise InputError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}",
                         field="--port") from None
    print(f"harnesslab serve: {sc.id}/{name} seed {args.seed} at {server.url} "
          f"(one API key per session); records in {out}", file=sys.stderr, flush=True)
    try:
        server.run()
    finally:
        serve.close()
    return 0


def add_wire_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser(
        "serve", help="serve a scenario's fake model (OpenAI API) and tools over HTTP",
        description="OpenAI Chat Completions at /v1/chat/completions (tools, streaming) and "
        "/v1/models, backed by the simulated service and the fake model; the tools at "
        "/harnesslab/tools. Each API key is a session: its own world and record "
        "(OUT/session<N>.jsonl). Needs: pip install 'harnesslab[serve]'.")
    s.add_argument("scenario", metavar="SCENARIO", help="a scenario file or a bundled id")
    s.add_argument("--variant", metavar="V", help="the variant (default: 'default' or the first)")
    s.add_argument("--seed", type=int, default=0, help="the seed (default 0)")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    s.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a setting beneath the variant's own (e.g. service=qwen-131k)")
    s.add_argument("--out", metavar="DIR", help="a new or empty folder for the session records "
                   "(default: a new runs/<timestamp>/)")
    s.set_defaults(func=_cmd_serve)
