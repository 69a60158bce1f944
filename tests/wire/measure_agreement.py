"""The README's agreement figure: every bundled scenario variant run in-process with the fake
model, then its records replayed by ``harnesslab agree`` to the same fake model behind
``harnesslab serve`` on loopback, one serve per variant (its settings as the record's).

    python -m tests.wire.measure_agreement OUT_DIR     # several minutes
"""
import os
import sys
from pathlib import Path

from harnesslab.run.runner import run_scenario_file
from harnesslab.run.serve import ScenarioServe
from harnesslab.scenario.loader import bundled_dir, load_scenario, scenario_paths
from harnesslab.study.agree import Replayer, agree, summary


def main(out: Path) -> None:
    os.environ["K"] = "loopback"  # serve takes any key: each one is a session
    out.mkdir(exist_ok=True)
    allturns = []
    for p in scenario_paths([str(bundled_dir())]):
        sc = load_scenario(p)
        run_scenario_file(p, out_dir=out / "runs")
        for v in sc.variants:
            serve = ScenarioServe(sc, v, source=p, out_dir=None)
            srv = serve.server().start()
            try:
                turns = agree(sorted((out / "runs" / sc.id / v.name).glob("seed*.jsonl")),
                              Replayer(srv.url, "harnesslab", "K"))
            finally:
                srv.stop()
                serve.close()
            for t in turns:
                if not t.skipped and not t.agrees:
                    print("   DISAGREE", t.record, t.step, t.fake_failed, t.real_failed,
                          t.real_reply[:80])
            allturns += turns
        print(sc.id, flush=True)
    print("ALL", summary(allturns))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
