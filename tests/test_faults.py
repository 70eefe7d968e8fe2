"""The fault drill of bench/faults.py, short: two servers and a worker on a throwaway PostgreSQL, each killed or
restarted (the database too) while campaigns and a pairwise job run; nothing lost, nothing stored twice, nothing
stuck, the campaigns of the killed server finished by another process, health answered within a second by the
servers that were up (while a flood of pairwise jobs waits on a slow judge too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.testing.faults import Drill, run_drill


@pytest.mark.long
def test_a_short_fault_drill_loses_repeats_and_leaves_stuck_nothing(tmp_path: Path) -> None:
    from evalcore.testing.postgres_server import postgres_bin

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    # The servers' memory is measured by bench/faults.py, not here: no pause to let it settle.
    drill = Drill(campaigns=3, questions=12, lease_s=4.0, delay_s=0.2, flood=12, flood_hold_s=1.0, deadline_s=180,
                  settle_s=0.0)
    outcome = run_drill(drill, tmp_path, say=lambda line: None)
    assert (outcome.lost, outcome.duplicated, outcome.stuck) == (0, 0, []), outcome
    # Serve A is killed only once it runs a campaign; each it held is finished elsewhere, every question stored once.
    served = outcome.takeovers["serve A"]
    assert served.held, outcome
    for takeover in outcome.takeovers.values():
        assert takeover.finished_elsewhere == len(takeover.held), outcome
    assert outcome.statuses == {"succeeded": 3}, outcome
    assert outcome.pairwise == "succeeded", outcome
    assert outcome.probes > 0, outcome.log
    assert outcome.probes_within_1s == outcome.probes, outcome.log
    assert set(outcome.flood_answers) <= {202, 409}, outcome.flood_answers
    # Health was probed while the flood's jobs waited on the 20 s judge, and answered in time.
    assert outcome.flood_jobs_waiting > 0, outcome
    assert outcome.flood_probes > 0, outcome
    assert outcome.flood_probes_within_1s == outcome.flood_probes, outcome.log
