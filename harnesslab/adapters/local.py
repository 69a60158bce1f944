"""Whether the model behind the wire's sessions answers without waiting on anything."""

from __future__ import annotations

from contextvars import ContextVar

# Whether the model behind the sessions opened now answers without waiting on anything (the
# simulated world's fake model): then their calls and tool runs are served on the event loop
# itself. A hop to a worker thread and back cost about 160 µs of CPU a request, more than the
# simulated world's own work in most calls, and under the GIL the thread ran nothing in
# parallel anyway. A real model waits on the network: its calls keep their thread, so that
# other sessions are served meanwhile. Set by the runner for the run it drives.
LOCAL_MODEL: ContextVar[bool] = ContextVar("harnesslab_local_model", default=False)
