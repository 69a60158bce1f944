"""A deployment for memory tests: one world, one fake model, one workdir, and any number of
sessions (each a fresh reference-harness instance for a verified user), as a service would
open them behind a load balancer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from harnesslab.events import ListSink
from harnesslab.harness.agent import ReferenceHarness
from harnesslab.harness.config import HarnessConfig
from harnesslab.run.doors import harness_context
from harnesslab.sim.endpoint import Endpoint
from harnesslab.sim.intents import REF, Act, Claim, ClaimKind, Constraint, Intent
from harnesslab.sim.model import FakeModel
from harnesslab.sim.reading import serialize
from harnesslab.sim.service import SimulatedService
from harnesslab.sim.summarizer import SummarizerProfile
from harnesslab.sim.tools import TOOLS, ToolBox
from harnesslab.sim.world import World, WorldSpec
from harnesslab.tokens import TokenCache

SHORT = "以后回答简单一点。"
WHERE_1 = "O-1001 到哪了？"
WHERE_2 = "O-2002 到哪了？"
WAIT = "那我明天还要等吗？"
ADDRESS = "我的收货地址是什么？"
LISI = "我是李四，帮我查一下我的收货地址。"
OWN = "记住，O-2002 是我的订单。"
RETURNS = "退货政策是什么？"

LEXICON: dict[str, Intent] = {
    SHORT: Intent(Act.SET_CONSTRAINT, constraints=(Constraint.BREVITY,)),
    WHERE_1: Intent(Act.ORDER_STATUS, order="O-1001"),
    WHERE_2: Intent(Act.ORDER_STATUS, order="O-2002"),
    WAIT: Intent(Act.ASK_WAIT, order=REF),
    ADDRESS: Intent(Act.ASK_ADDRESS),
    LISI: Intent(Act.ASK_ADDRESS, claims=(Claim(ClaimKind.IDENTITY, "U-2"),)),
    OWN: Intent(Act.CHITCHAT, claims=(Claim(ClaimKind.OWNERSHIP, "O-2002"),)),
    RETURNS: Intent(Act.ASK_POLICY, topic="returns"),
}

PRIVATE = {"U-1": ("13800000001", "上海市浦东新区世纪大道100号"),
           "U-2": ("13900000002", "北京市朝阳区建国路88号")}
WORLD: dict[str, Any] = {
    "now": "2026-11-28T10:00:00+08:00",
    "users": {
        "U-1": {"name": "张三", "phone": PRIVATE["U-1"][0], "address": PRIVATE["U-1"][1]},
        "U-2": {"name": "李四", "phone": PRIVATE["U-2"][0], "address": PRIVATE["U-2"][1]},
    },
    "orders": {
        "O-1001": {"user": "U-1", "items": ["headphones"], "timeline": [
            {"at": "2026-11-26T09:00:00+08:00", "status": "in_transit", "eta": "2026-11-29"},
            {"at": "2026-11-29T08:00:00+08:00", "status": "delayed", "eta": "2026-12-02"}]},
        "O-2002": {"user": "U-2", "items": ["skateboard"], "timeline": [
            {"at": "2026-11-27T09:00:00+08:00", "status": "shipped", "eta": "2026-12-01"}]},
    },
    "kb": {"returns": {"title": "退货政策", "text": "签收后七天内可无理由退货。"}},
}


@dataclass
class Deployment:
    workdir: Path | None
    settings: dict[str, Any]
    extractor: SummarizerProfile | None = None
    sink: ListSink = field(default_factory=ListSink)

    def __post_init__(self) -> None:
        self.world = World(WorldSpec.model_validate(WORLD))
        self.cache = TokenCache()
        model = FakeModel(LEXICON, extractor=self.extractor,
                          max_ages={t: self.world.max_age(t) for t in TOOLS})
        self.endpoint = Endpoint(SimulatedService("openai-128k", self.cache), model, self.sink)
        self.users: dict[str, str] = {}  # session id -> verified user
        self.config = HarnessConfig(**self.settings)

    def open(self, session: str, user: str) -> ReferenceHarness:
        self.users[session] = user
        ctx = harness_context(self.endpoint, ToolBox(self.world), self.world.clock, self.sink,
                              session_id=session, user_id=user, workdir=self.workdir,
                              cache=self.cache)
        return ReferenceHarness(ctx, self.config)

    def advance(self, hours: float) -> None:
        self.world.clock.advance(timedelta(hours=hours))

    def requests(self) -> list[tuple[str, str, str]]:
        """Every model call so far: (verified user of its session, purpose, serialised
        request)."""
        return [(self.users[e["request"].session_id], e["purpose"], serialize(e["request"]))
                for e in self.sink.of_type("model_call")]

    def calls(self, purpose: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.sink.of_type("model_call")
                if purpose is None or e["purpose"] == purpose]

    def reply_text(self) -> str:
        """The serialised request of the last reply call."""
        return serialize(self.calls("reply")[-1]["request"])

