"""The wire's subcommands (``harnesslab serve``, ``mcp``, ``agree``), kept out of ``cli.py`` so
it stays small."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harnesslab.cli.common import parse_sets, run_dir
from harnesslab.errors import InputError

if TYPE_CHECKING:
    from harnesslab.scenario.schema import Scenario, Variant


def scenario_file(raw: str) -> Path:
    """A scenario file, or the id of a bundled one."""
    from harnesslab.scenario.loader import bundled_dir

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
    from harnesslab.scenario.loader import load_scenario

    path = scenario_file(raw)
    sc = load_scenario(path)
    names = [v.name for v in sc.variants]
    name = name or ("default" if "default" in names else names[0])
    if name not in names:
        raise InputError(f"no variant {name!r}; expected one of {', '.join(names)}",
                         file=str(path), field="--variant")
    return path, sc, next(v for v in sc.variants if v.name == name)


def _cmd_serve(args: argparse.Namespace) -> int:
    path, sc, variant = scenario_variant(args.scenario, args.variant)
    name = variant.name
    cli_set = parse_sets(args.set)
    out, _ = run_dir(args.out)
    try:
        from harnesslab.run.serve import ScenarioServe

        serve = ScenarioServe(sc, variant, seed=args.seed, source=path, out_dir=out,
                              cli_set=cli_set)
        server = serve.server(args.host, args.port)
    except ImportError as e:
        raise InputError(str(e), field="serve") from None
    except OSError as e:
        raise InputError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}",
                         field="--port") from None
    print(f"harnesslab serve: {sc.id}/{name} seed {args.seed} at {server.url} "
          f"(Anthropic and Ollama at {server.url.removesuffix('/v1')}; one API key per "
          f"session); records in {out}", file=sys.stderr, flush=True)
    try:
        server.run()
    finally:
        serve.close()
    return 0


def _scenario_arguments(p: argparse.ArgumentParser) -> None:
    """What serve and mcp both take: one scenario variant, its seed and settings."""
    p.add_argument("scenario", metavar="SCENARIO", help="a scenario file or a bundled id")
    p.add_argument("--variant", metavar="V", help="the variant (default: 'default' or the first)")
    p.add_argument("--seed", type=int, default=0, help="the seed (default 0)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a setting beneath the variant's own (e.g. service=qwen-131k)")


def add_wire_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser(
        "serve", help="serve a scenario's fake model (OpenAI API) and tools over HTTP",
        description="OpenAI Chat Completions at /v1/chat/completions (tools, streaming) and "
        "/v1/models, backed by the simulated service and the fake model; the tools at "
        "/harnesslab/tools. Each API key is a session: its own world and record "
        "(OUT/session<N>.jsonl). Needs: pip install 'harnesslab[serve]'.")
    _scenario_arguments(s)
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    s.add_argument("--out", metavar="DIR", help="a new or empty folder for the session records "
                   "(default: a new runs/<timestamp>/)")
    s.set_defaults(func=_cmd_serve)
    _add_mcp(sub)
    _add_agree(sub)


def _cmd_mcp(args: argparse.Namespace) -> int:
    import asyncio

    from harnesslab.adapters import mcp_app as m

    m.require_mcp()
    from harnesslab.run.mcp import scenario_session

    path, sc, variant = scenario_variant(args.scenario, args.variant)
    session, writer = scenario_session(sc, variant, seed=args.seed, source=path,
                                         cli_set=parse_sets(args.set),
                                         record=Path(args.record) if args.record else None)
    try:
        if args.stdio:
            asyncio.run(m.serve_stdio(session))
            return 0
        sessions = m.ToolSessions()
        token = sessions.open(session, args.token)
        server, url = m.http_server(sessions, args.host, args.port)
        # Listening before the URL is printed: a client that connects at once is queued until
        # uvicorn accepts, never refused.
        server.sock.listen(128)
        # stdout carries only these two lines (a program may read or eval them).
        print(f"HARNESSLAB_MCP_URL={url}\nHARNESSLAB_MCP_TOKEN={token}", flush=True)
        server.run()
        return 0
    finally:
        writer.close()


def _add_mcp(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    m = sub.add_parser(
        "mcp", help="serve a scenario's tools as an MCP server (stdio or streamable HTTP)",
        description="The world's tools of one scenario variant over MCP. Tools act for the "
        "scenario's verified user, whatever user_id a call passes (unless the variant sets "
        "identity: trust). Over HTTP every request needs the printed bearer token. Needs the "
        "mcp extra: pip install 'harnesslab[mcp]'.")
    _scenario_arguments(m)
    m.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (default: HTTP)")
    m.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    m.add_argument("--port", type=int, default=0, help="HTTP port (default: any free one)")
    m.add_argument("--token", help="the session's bearer token (default: a random one)")
    m.add_argument("--record", metavar="FILE", help="write the tool runs to this record")
    m.set_defaults(func=_cmd_mcp)


def _cmd_agree(args: argparse.Namespace) -> int:
    from harnesslab.study.agree import Replayer, agree, format_agreement, record_paths, summary

    paths = record_paths(args.records)
    turns = agree(paths, Replayer(args.base_url, args.model, args.api_key_env, args.timeout))
    if args.json:
        print(json.dumps({"summary": summary(turns), "turns": [t.to_dict() for t in turns]},
                         ensure_ascii=False, indent=2))
    else:
        print(format_agreement(turns), end="")
    return 0


def _add_agree(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    a = sub.add_parser(
        "agree", help="replay recorded requests to a real model: do the fake model's verdicts "
        "transfer?", description="Sends each recorded turn's requests to a model behind an "
        "OpenAI-compatible endpoint and reports, per turn, whether its answer passes the same "
        "answer-level checks as the fake model's, and the agreement rate. Needs the openai "
        "extra: pip install 'harnesslab[openai]'.")
    a.add_argument("records", nargs="+", metavar="RECORD",
                   help="record files, or folders searched for seed*.jsonl")
    a.add_argument("--base-url", required=True, metavar="URL", help="e.g. http://127.0.0.1:8765/v1")
    a.add_argument("--model", required=True, metavar="NAME", help="the model name to send")
    a.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="the environment variable holding the API key (default OPENAI_API_KEY)")
    a.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    a.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a.set_defaults(func=_cmd_agree)
