"""``refqueue bench queue`` runs end to end and prints exactly one JSON object
with every figure (a smoke test: the numbers themselves are not judged)."""

from __future__ import annotations

import json

from refqueue.cli import main


def test_bench_queue_quick_prints_one_json_object(capsys):
    assert main(["bench", "queue", "--json", "--quick", "--convoy-mb", "0"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)  # stdout is the JSON and nothing else
    assert set(result["put_us"]) == set(result["acquire_ack_us"]) == {"1000", "10000"}
    for key in ("reclaim_idle_us_10000", "reclaim_all_us_per_lease_10000", "wake_latency_ms_p50",
                "wake_latency_ms_p99", "floor_acquire_ack_us"):
        assert isinstance(result[key], float) and result[key] > 0, key
    assert all(v > 0 for v in list(result["put_us"].values()) + list(result["acquire_ack_us"].values()))
    assert result["convoy_acquire_ack_p99_ms"] is None  # skipped with --convoy-mb 0
    assert "bench: backlog 1,000" in err
