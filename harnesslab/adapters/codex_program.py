"""The real Codex CLI (npm @openai/codex, tested with 0.171.0) under the bench, as a black-box
program (standard library only), registered as the harness ``codex-cli``:

    harnesslab run followup-o1001-zh --set harness=codex-cli --set turn_timeout=300

``harness=codex-cli`` runs ``python -m harnesslab.adapters.codex_program``; with arguments
(below) name it as ``cmd:"python -m harnesslab.adapters.codex_program --host-clock"``.
``examples/codex_agent.py`` in a checkout runs the same program.

Every turn is a fresh Codex process: `codex exec --json` for the session's first turn, `codex
exec resume <thread id> --json` for each later one, so each turn restores the session from
Codex's own rollout (CODEX_HOME/sessions/.../rollout-*.jsonl), the way a restart, a kill or
another instance would. CODEX_HOME lives in HARNESSLAB_WORKDIR, kept for the whole run.

- the model: a provider whose base_url is the bench's OPENAI_BASE_URL, wire_api "responses"
  (Codex refuses the chat wire), its key from OPENAI_API_KEY;
- the tools: the bench's MCP server (HARNESSLAB_MCP_URL, streamable HTTP, bearer token from
  HARNESSLAB_MCP_TOKEN) as `[mcp_servers.harnesslab]`;
- Codex's window and compaction: `model_context_window` from the bench's `context_size`,
  `model_auto_compact_token_limit` from `codex.auto_compact_limit` (unset: Codex's default, 90%
  of the window), `tool_output_token_limit` from `codex.tool_output_limit`, each passed as
  `-c key=value`; `--codex-config key=value` (repeatable) or CODEX_AGENT_CONFIG (`;`-separated)
  add any other override. Codex's kept user messages after a compaction (20,000 tokens,
  `COMPACT_USER_MESSAGE_MAX_TOKENS` in codex-rs/core/src/compact.rs) are not configurable, so a
  variant setting `codex.user_message_budget` is not declared honoured;
- the filler (`preload`): unsupported, so each exchange comes as a user turn (a Codex process
  each); writing it into the rollout is not done (docs/codex.md says why);
- the binary: HARNESSLAB_CODEX, else `codex` on PATH, else an npm install under `.ci/node` of
  the working folder or of the checkout (what .ci/run installs).

The reply is the last `agent_message` item of the JSON events; a turn that ends in
`turn.failed` or `error` is a failed reply with Codex's message as the reason.
"""
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[2]  # an editable install's checkout
CANDIDATES = [base / ".ci" / "node" / "node_modules" / ".bin" / "codex"
              for base in (Path.cwd(), CHECKOUT)]
SERVER = "harnesslab"  # the MCP server's name in Codex's config: its tools are SERVER__tool


class ClockShim:
    """The world's date in place of the host's, where Codex's request shows the clock.

    Codex writes `<current_date>` (and `<timezone>`) into its `<environment_context>` from
    the host clock (codex-rs/core/src/environment_context.rs); under the bench the world's
    clock is the scenario's, days away. The binary is static (musl), so libfaketime cannot
    shift its clock. This loopback relay between Codex and the bench replaces the stated date
    with the world's current date (from the protocol's `now`), as if Codex ran on the
    world's day, and passes everything else through byte for byte. `--host-clock` turns it
    off (Codex then states the host's date: a skewed clock, the control)."""

    DATE = re.compile(rb"<current_date>\d{4}-\d{2}-\d{2}</current_date>")

    def __init__(self, upstream: str) -> None:
        self.up = urllib.parse.urlsplit(upstream.rstrip("/"))
        self.date = ""
        shim = self

        class Relay(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def relay(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                if shim.date and body:
                    body = shim.DATE.sub(f"<current_date>{shim.date}</current_date>".encode(),
                                         body)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                if body:
                    headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(shim.up.hostname or "127.0.0.1", shim.up.port,
                                                  timeout=600)
                try:
                    conn.request(self.command, shim.up.path + self.path.removeprefix("/v1"),
                                 body=body or None, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                except OSError as e:
                    self.send_error(502, str(e))
                    return
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def at(self, now: str | None) -> None:
        if now:
            self.date = now[:10]  # the ISO date in the world's own zone


def find_codex() -> str:
    named = os.environ.get("HARNESSLAB_CODEX")
    if named and not Path(named).is_file():
        sys.exit(f"codex-cli: HARNESSLAB_CODEX={named} is not a file")
    given = named or shutil.which("codex")
    if given:
        return given
    for c in CANDIDATES:
        if c.exists():
            return str(c)
    sys.exit("codex-cli: no Codex CLI (set HARNESSLAB_CODEX, put codex on PATH, or "
             "npm install @openai/codex@0.171.0)")


def native(binary: str) -> tuple[str, dict[str, str]]:
    """The prebuilt binary behind npm's node launcher, and the environment the launcher gives
    it. Run directly, it is our child and dies with us (PR_SET_PDEATHSIG): under node 20 the
    launcher spawns it as a grandchild, which a SIGKILL of this program (the bench's kill step)
    would leave running."""
    script = Path(binary).resolve()
    if script.suffix != ".js":
        return binary, {}
    root = script.parent.parent  # node_modules/@openai/codex
    found = sorted(root.parent.glob("codex-*/vendor/*/bin/codex"))
    if not found:
        return binary, {}
    return str(found[0]), {"CODEX_MANAGED_BY_NPM": "1", "CODEX_MANAGED_PACKAGE_ROOT": str(root)}


def die_with_parent() -> None:
    """In the child before exec: SIGKILL when this program dies (Linux; elsewhere a no-op)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def write_config(home: Path, base_url: str) -> None:
    """CODEX_HOME/config.toml: the bench as the model provider and the tool server. Rewritten
    by each process (the URL and key are per instance); the sessions stay."""
    lines = [
        'model = "harnesslab"',
        'model_provider = "hl"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        "[model_providers.hl]",
        'name = "harnesslab"',
        f"base_url = {toml_str(base_url)}",
        'wire_api = "responses"',
        'env_key = "OPENAI_API_KEY"',
        # The bench answers at once or not at all: a retried request would be a second call.
        "request_max_retries = 0",
        "stream_max_retries = 0",
    ]
    if os.environ.get("HARNESSLAB_MCP_URL"):
        lines += [f"[mcp_servers.{SERVER}]",
                  f"url = {toml_str(os.environ['HARNESSLAB_MCP_URL'])}",
                  'bearer_token_env_var = "HARNESSLAB_MCP_TOKEN"',
                  # The tools carry no read-only annotation, so Codex would ask for approval,
                  # which `codex exec` under approval_policy "never" refuses (codex-rs/core/src/
                  # mcp_tool_call.rs): the deployer approves its own server's tools.
                  'default_tools_approval_mode = "approve"',
                  # Codex starts an optional server in the background and gives it a short
                  # grace before the first request goes out without its tools (under load the
                  # first turn offered none: "no tool for it was offered"): the deployment's
                  # own tools are required, so Codex waits for them (up to the timeout below).
                  "required = true",
                  "startup_timeout_sec = 30",
                  "tool_timeout_sec = 60"]
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def overrides(settings: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The `-c` overrides from the hello line's harness settings, and the settings honoured."""
    out, honours = [], []
    if isinstance(settings.get("context_size"), int):
        out.append(f"model_context_window={settings['context_size']}")
        honours.append("context_size")
    codex = settings.get("codex") or {}
    if codex:
        if isinstance(codex.get("auto_compact_limit"), int):
            out.append(f"model_auto_compact_token_limit={codex['auto_compact_limit']}")
        if isinstance(codex.get("tool_output_limit"), int):
            out.append(f"tool_output_token_limit={codex['tool_output_limit']}")
        if codex.get("user_message_budget") is None:  # Codex's own constant: see the docstring
            honours.append("codex.*")
    return out, honours


def extra_overrides(argv: list[str]) -> list[str]:
    out = [c for c in os.environ.get("CODEX_AGENT_CONFIG", "").split(";") if c.strip()]
    for i, a in enumerate(argv):
        if a == "--codex-config" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith("--codex-config="):
            out.append(a.split("=", 1)[1])
    return out


class Codex:
    def __init__(self, workdir: Path, session: str, settings: dict[str, Any],
                 argv: list[str]) -> None:
        self.home = workdir / "codex-home"
        self.cwd = workdir / "codex-cwd"  # Codex's working root: empty, read-only sandbox
        self.cwd.mkdir(parents=True, exist_ok=True)
        # The session's thread id: the pointer to Codex's rollout, which holds the conversation.
        self.pointer = workdir / f"codex-thread-{session}"
        self.binary, self.env = native(find_codex())
        upstream = os.environ["OPENAI_BASE_URL"].rstrip("/")
        self.shim = None if "--host-clock" in argv else ClockShim(upstream)
        write_config(self.home, self.shim.url if self.shim else upstream)
        self.config, self.honours = overrides(settings)
        self.config += extra_overrides(argv)
        self.proc: subprocess.Popen[str] | None = None

    def thread(self) -> str | None:
        return self.pointer.read_text().strip() if self.pointer.exists() else None

    def turn(self, text: str, images: list[dict[str, Any]]) -> dict[str, Any]:
        thread = self.thread()
        cmd = [self.binary, "exec"]
        if thread:
            cmd += ["resume", thread]
        cmd += ["--json", "--skip-git-repo-check"]
        for c in self.config:
            cmd += ["-c", c]
        files = []
        for n, img in enumerate(images):
            import base64
            path = self.cwd.parent / f"codex-image-{n}.{img['media_type'].split('/')[-1]}"
            path.write_bytes(base64.b64decode(img["data"]))
            files.append(str(path))
        for f in files:
            cmd += ["-i", f]
        cmd += ["--", text]
        env = {**os.environ, **self.env, "CODEX_HOME": str(self.home)}
        self.proc = subprocess.Popen(cmd, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=sys.stderr, text=True,
                                     encoding="utf-8", preexec_fn=die_with_parent)
        reply, failure = None, None
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            print(line, end="", file=sys.stderr)  # Codex's events: this program's log
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("type")
            if kind == "thread.started" and not thread:
                self.pointer.write_text(event["thread_id"])
            elif kind == "item.completed" and event.get("item", {}).get("type") == "agent_message":
                reply = event["item"].get("text", "")
            elif kind == "turn.failed":
                failure = (event.get("error") or {}).get("message", "turn failed")
            elif kind == "error":
                failure = event.get("message", "error")
        code = self.proc.wait()
        self.proc = None
        if reply is not None and failure is None:
            return {"text": reply}
        return {"text": reply or "", "failed": True,
                "reason": failure or f"codex exited {code} without a reply"}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()


def main() -> None:
    IN = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_IN"]), encoding="utf-8")
    OUT = os.fdopen(int(os.environ["HARNESSLAB_PROTOCOL_OUT"]), "w", encoding="utf-8")
    workdir = Path(os.environ["HARNESSLAB_WORKDIR"])
    codex: Codex | None = None

    def answer(obj: dict[str, Any]) -> None:
        OUT.write(json.dumps(obj, ensure_ascii=False) + "\n")
        OUT.flush()

    # SIGTERM (a restart, the run's end): stop Codex with us; a SIGKILL reaches Codex by
    # PR_SET_PDEATHSIG.
    def stop(*_: object) -> None:
        if codex:
            codex.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    for line in IN:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "shutdown":
            break
        if codex is not None and codex.shim is not None:
            codex.shim.at(msg.get("now"))
        if kind == "hello":
            codex = Codex(workdir, os.environ["HARNESSLAB_SESSION_ID"], msg.get("settings") or {},
                          sys.argv[1:])
            if codex.shim is not None:
                codex.shim.at(msg.get("now"))
            answer({"type": "hello", "honours": codex.honours})
        elif kind == "user":
            assert codex is not None
            answer({"type": "reply", **codex.turn(msg["text"], msg.get("images") or [])})
        elif kind == "preload":
            answer({"type": "unsupported"})
        else:  # advance: the clock shim took the new date above
            answer({"type": "ok"})


if __name__ == "__main__":
    main()
