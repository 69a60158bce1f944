"""The world's tools as an MCP server (the official ``mcp`` SDK, extra ``harnesslab[mcp]``), over
streamable HTTP and stdio, for harnesses that reach their tools through MCP.

What it offers is what the harness interface offers (``bench.doors.ToolDoor``): the tools'
names, descriptions and JSON schemas, and their results. Nothing else goes over the wire: no
scenario, expectations, lexicon, world or private data beyond what a tool returns to the user
it acts for.

**Who a call acts for.** Each session is opened with a per-session bearer token
(:meth:`ToolSessions.open`); over HTTP the SDK's bearer middleware verifies it on every request
and a request without a known token is refused (401) before any tool runs. The acting user is
the user that session was opened for, never a tool argument: a ``user_id`` the model passed is
overridden (``identity: bind``, the default) or left for the tool to refuse (``refuse``); only
the trust control (``identity: trust``) lets the argument choose the user, exactly as the
reference harness decides for its own calls (``harness.identity``). Over stdio the connection
is the session: the process serves the user it was started for.

Every call is recorded by the session's tool door (``tool_call``, with the acting user) and its
identity decision as a ``tool_policy`` event, as the reference harness records its own.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harnesslab.errors import InputError
from harnesslab.events import EventSink
from harnesslab.harness.base import HarnessContext, ToolExecutor
from harnesslab.harness.identity import IdentityMode, bind_identity
from harnesslab.messages import ToolOutcome

MCP_EXTRA = "pip install 'harnesslab[mcp]'"
SERVER_NAME = "harnesslab-tools"


def require_mcp() -> None:
    """The exact install line when the ``mcp`` extra is missing."""
    # find_spec, not an import: the SDK's import is about 0.9 s, paid where it is used.
    if importlib.util.find_spec("mcp") is None:
        raise InputError(f"the MCP tool server needs the mcp package: {MCP_EXTRA}",
                         field="mcp")


@dataclass
class ToolSession:
    """One verified session: the user it acts for and the recording tool door it runs through."""

    user: str
    tools: ToolExecutor
    identity: IdentityMode = "bind"
    sink: EventSink | None = None
    calls: int = 0
    # Called after each tool run (the record's flush): a server stopped by a signal, or killed,
    # still has every finished call in its record.
    after: Callable[[], None] | None = None
    # The runner's thread and the server's event loop share the record: one call at a time.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def schemas(self) -> list[dict[str, Any]]:
        """The tools as MCP lists them: name, description, input schema."""
        out = []
        for s in self.tools.schemas():
            fn = s.to_dict().get("function", s.to_dict())
            out.append({"name": fn["name"], "description": fn.get("description", ""),
                        "input_schema": fn.get("parameters") or {"type": "object"}})
        return out

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolOutcome:
        raw = json.dumps(dict(arguments or {}), ensure_ascii=False)
        b = bind_identity(self.identity, self.user, raw)
        with self.lock:
            self.calls += 1
            # Under ``refuse`` the differing user_id goes through unchanged: the tool itself
            # answers that it is not the acting user's (a forbidden error result).
            out = self.tools.run(name, b.arguments, b.acting)
            if self.sink is not None:
                self.sink.emit({"type": "tool_policy", "id": f"mcp-{self.calls}", "name": name,
                                "claimed": b.claimed, "identity": b.decision,
                                "truncated": False, "via": "mcp"})
            if self.after is not None:
                self.after()
        return out


class ToolSessions:
    """The sessions one server serves, by bearer token."""

    def __init__(self) -> None:
        self._by_token: dict[str, ToolSession] = {}
        self._lock = threading.Lock()

    def open(self, session: ToolSession, token: str | None = None) -> str:
        """Register a session and return its token. Tokens are secrets, never recorded: a
        run's record is the same whatever token it was served under."""
        token = token or secrets.token_urlsafe(24)
        with self._lock:
            if token in self._by_token:
                raise ValueError("this token already names a session")
            self._by_token[token] = session
        return token

    def close(self, token: str) -> None:
        with self._lock:
            self._by_token.pop(token, None)

    def get(self, token: str) -> ToolSession | None:
        with self._lock:
            return self._by_token.get(token)


def _session_of(ctx: Any, sessions: ToolSessions, fixed: ToolSession | None) -> ToolSession:
    """The verified session of the request: the stdio process's own, or the one the bearer
    token the SDK's middleware verified names."""
    if fixed is not None:
        return fixed
    user = getattr(getattr(ctx, "request", None), "scope", {}).get("user")
    token = getattr(getattr(user, "access_token", None), "token", None)
    session = sessions.get(token) if token else None
    if session is None:  # the middleware already refused unknown tokens; closed since
        raise PermissionError("no verified session for this connection")
    return session


def build_server(sessions: ToolSessions, fixed: ToolSession | None = None) -> Any:
    """The low-level MCP server: ``tools/list`` and ``tools/call`` for the caller's session."""
    require_mcp()
    import mcp.types as types
    from mcp.server import Server

    async def list_tools(ctx: Any, params: Any) -> Any:
        s = _session_of(ctx, sessions, fixed)
        return types.ListToolsResult(tools=[types.Tool(**t) for t in s.schemas()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        s = _session_of(ctx, sessions, fixed)
        out = s.call(params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=out.text)],
                                    is_error=out.is_error)

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


def http_app(sessions: ToolSessions, *, host: str = "127.0.0.1", path: str = "/mcp") -> Any:
    """A Starlette app serving streamable HTTP at ``path``; each request's bearer token is
    verified by the SDK's middleware against ``sessions``."""
    require_mcp()
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings

    class _Verifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            s = sessions.get(token)
            return None if s is None else AccessToken(token=token, client_id=s.user, scopes=[])

    # The SDK's auth settings want an issuer; the tokens are the bench's own (no OAuth flow).
    auth = AuthSettings(issuer_url=f"http://{host}", resource_server_url=None)
    server = build_server(sessions)
    return server.streamable_http_app(streamable_http_path=path, host=host, auth=auth,
                                      token_verifier=_Verifier(), json_response=True)


async def serve_stdio(session: ToolSession) -> None:
    """Serve one session on this process's stdin and stdout until the client closes them."""
    require_mcp()
    from mcp.server.stdio import stdio_server

    server = build_server(ToolSessions(), fixed=session)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class _OnFirstRequest:
    """An ASGI app that builds the MCP app on its first HTTP request, not at start: importing
    the SDK costs about 0.9 s of CPU, and most black-box programs never use MCP (the bench
    starts the server before its first program, which must be given the address). The inner
    app's lifespan (the SDK's session manager) is started then, in the same event loop, and
    ended with the server's."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._app: Any = None
        self._to_inner: Any = None
        self._lifespan: Any = None
        self._lock = asyncio.Lock()

    async def _start(self) -> None:
        app = self._build()
        to_inner: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        started = asyncio.get_running_loop().create_future()

        async def send(message: dict[str, Any]) -> None:
            if message["type"].startswith("lifespan.startup") and not started.done():
                started.set_result(message)

        self._lifespan = asyncio.ensure_future(
            app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                to_inner.get, send))
        await to_inner.put({"type": "lifespan.startup"})
        message = await started
        if message["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"the MCP app did not start: {message.get('message', '')}")
        self._app, self._to_inner = app, to_inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if self._lifespan is not None:
                        await self._to_inner.put({"type": "lifespan.shutdown"})
                        await self._lifespan
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        async with self._lock:
            if self._app is None:
                await self._start()
        await self._app(scope, receive, send)


def http_server(sessions: ToolSessions, host: str = "127.0.0.1",
                port: int = 0) -> tuple[Any, str]:
    """The MCP app on a bound socket, not yet serving (``run()`` in the foreground, ``start()``
    in a background thread, ``stop()``): (the server, its MCP URL). The app is built on the
    first request (:class:`_OnFirstRequest`)."""
    from harnesslab.adapters.serve_app import Server

    require_mcp()
    server = Server(_OnFirstRequest(lambda: http_app(sessions, host=host)), host, port,
                    lifespan="on")
    return server, server.url.removesuffix("/v1") + "/mcp"


_shared: tuple[Any, ToolSessions, str] | None = None
_shared_lock = threading.Lock()


def shared_sessions() -> tuple[ToolSessions, str] | None:
    """The bench process's one MCP server for black-box sessions, started on first use: its
    sessions and URL; None when the mcp extra is not installed (no MCP for the program)."""
    global _shared
    # Whether the extra is installed, without importing it (its import is the cost the
    # server defers to its first request).
    if importlib.util.find_spec("mcp") is None:
        return None
    with _shared_lock:
        if _shared is None:
            sessions = ToolSessions()
            server, url = http_server(sessions)
            _shared = (server.start(), sessions, url)
        return _shared[1], _shared[2]


def open_for(context: HarnessContext, identity: IdentityMode, token: str,
             lock: threading.Lock) -> dict[str, str]:
    """Open a harness context's tools on the shared MCP server under ``token`` (``lock``: the
    one its model calls take, so a tool run and a model call never interleave in the record);
    the program's environment variables, or none without the mcp extra."""
    shared = shared_sessions()
    if shared is None:
        return {}
    sessions, url = shared
    sessions.open(ToolSession(context.session.user, context.tools, identity, context.sink,
                              lock=lock), token)
    return {"HARNESSLAB_MCP_URL": url, "HARNESSLAB_MCP_TOKEN": token}


def close_for(token: str) -> None:
    """Refuse ``token`` from now on (the session ended)."""
    if _shared is not None:
        _shared[1].close(token)
