"""A fault drill: two `serve` processes and one `worker` on a throwaway PostgreSQL, a loopback model that is
sometimes slow, each of them killed or restarted while 10 campaigns and a pairwise job run.

    python bench/faults.py [--campaigns 10] [--questions 20] [--lease 6] [--flood 60] [--flood-hold 3]

Prints, as the drill goes, how long the work took to go on after each fault, then: questions stored exactly once
(lost, duplicated), the campaigns each killed process held and how many another process finished, campaigns and
jobs stuck, health probes of the servers that were up answered within 1 s (through a flood of pairwise requests
against a judge that takes 20 s a reply, and held for a while after it), and the resident memory of the server
never killed, before the campaigns and after them. The servers' logs stay in the printed folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.testing.faults import Drill, run_drill


def main() -> int:
    """Run the drill; exit 1 when a question was lost or duplicated, something stuck, or a killed process's campaign
    was not finished elsewhere."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=10)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--lease", type=float, default=6.0, help="EVALCORE_LEASE_S of the processes (seconds)")
    parser.add_argument("--flood", type=int, default=60)
    parser.add_argument("--flood-hold", type=float, default=3.0,
                        help="seconds health is probed after the flood, while its jobs wait on the slow judge")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="evalcore-faults-"))
    print(f"logs: {work / 'logs'}", flush=True)
    drill = Drill(campaigns=args.campaigns, questions=args.questions, lease_s=args.lease, flood=args.flood,
                  flood_hold_s=args.flood_hold)
    outcome = run_drill(drill, work, say=lambda line: print(line, flush=True))
    print("\n| what | figure |\n|---|---|")
    rows = [
        ("questions expected", f"{outcome.expected}"),
        ("lost", f"{outcome.lost}"), ("duplicated (a row written twice)", f"{outcome.duplicated}"),
        ("stuck (campaigns or the pairwise job still active)", f"{len(outcome.stuck)}"),
        ("campaigns by status", ", ".join(f"{k} {v}" for k, v in sorted(outcome.statuses.items()))),
        ("pairwise job", outcome.pairwise),
        ("pairwise flood answers (status: count)", ", ".join(f"{k}: {v}" for k, v in
                                                             sorted(outcome.flood_answers.items()))),
        ("health probes answered within 1 s", (f"{outcome.probes_within_1s} of {outcome.probes} "
                                              f"(slowest {outcome.slowest_probe_s:.2f} s)")),
        ("of them during the flood, its jobs waiting on the judge", (f"{outcome.flood_probes_within_1s} of "
                                                                     f"{outcome.flood_probes} "
                                                                     f"({outcome.flood_jobs_waiting} jobs)")),
        *((f"campaigns held by the killed {who}: finished elsewhere, each question once",
           f"{takeover.finished_elsewhere} of {len(takeover.held)}") for who, takeover in outcome.takeovers.items()),
        ("RSS of serve B before / after (MB)", (f"{outcome.rss_before_mb:.0f} / {outcome.rss_after_mb:.0f} "
                                               f"({outcome.rss_after_mb / max(outcome.rss_before_mb, 1):.2f}x)")),
        *((f"recovery: {what}", f"{seconds:.1f} s") for what, seconds in outcome.recoveries.items()),
    ]
    for what, figure in rows:
        print(f"| {what} | {figure} |")
    for line in outcome.log:
        print(f"missed probe: {line}")
    left = any(takeover.finished_elsewhere < len(takeover.held) for takeover in outcome.takeovers.values())
    return 1 if outcome.lost or outcome.duplicated or outcome.stuck or left else 0


if __name__ == "__main__":
    sys.exit(main())
