import json
import subprocess
import sys

from refqueue.cli import main
from refqueue.model import actions as A
from refqueue.model.explorer import build_graph, explore, work_lost
from refqueue.model.world import make_world


def test_default_bounds_have_no_violation():
    result = explore(make_world(samples=3, consumers=2, max_deliveries=2))
    assert result.verdict == "ok", result.violations
    assert result.distinct_states > 1000
    assert result.transitions > result.distinct_states


def test_graph_and_explorer_agree_on_counts():
    world = make_world(samples=2, consumers=2)
    result = explore(world)
    graph = build_graph(world)
    assert len(graph.nodes) == result.distinct_states
    assert len(graph.edges) == result.transitions


def test_anchor_consumer_loop_violates_terminal_none_means_drained():
    world = make_world(samples=2, consumers=2, max_deliveries=2, anchor_consumer=True)
    result = explore(world, stop_on_violation=False, goals={"WorkLost": work_lost})
    assert result.verdict == "violation"
    trace = result.violations["TerminalNoneMeansDrained"]
    assert [s.label() for s in trace] == ["Init", "StorePut(0)", "TryPut(0)", "Close", "Acquire(0)", "Stop(1)"]
    lost = result.goals["WorkLost"]
    assert all(c.stopped for c in lost[-1].node.consumers)


def test_a_broken_action_is_caught_with_a_shortest_trace(monkeypatch):
    real_fail = A.fail

    def fail_without_counting(cfg, state, lease):
        out = real_fail(cfg, state, lease)
        if out.value is True and A.rec_of(out.state, lease.sample_id).status == "pending":
            i = A.find(out.state, lease.sample_id)
            r = out.state.recs[i]
            recs = out.state.recs[:i] + (r._replace(redeliveries=r.redeliveries - 1),) + out.state.recs[i + 1:]
            return out._replace(state=out.state._replace(recs=recs))
        return out

    monkeypatch.setattr(A, "fail", fail_without_counting)
    result = explore(make_world(samples=1, consumers=1))
    assert result.verdict == "violation"
    trace = result.violations["RedeliveryCountsDeliveries"]
    assert [s.label() for s in trace] == ["Init", "StorePut(0)", "TryPut(0)", "Acquire(0)", "Fail(0)"]


def test_budget_exhaustion_is_unknown_not_ok():
    result = explore(make_world(), max_states=500)
    assert result.verdict == "unknown"
    assert "max_states=500" in result.reason


def test_cli_default_run_prints_counts_and_the_counterexample(capsys):
    assert main(["explore", "--samples", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "== protocol: ok" in out and "distinct states" in out and "states/s" in out
    assert "== anchor-consumer: violation" in out
    assert "VIOLATION of TerminalNoneMeansDrained" in out and "reached WorkLost" in out


def test_cli_json_and_exit_codes(capsys):
    assert main(["explore", "--samples", "2", "--no-anchor", "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "ok" and data["bounds"]["samples"] == ["s0", "s1"] and data["distinct_states"] > 0
    assert main(["explore", "--samples", "3", "--producers", "2", "--sizes", "1,3,1", "--reput", "--producer-crash",
                 "--retain-copies", "--consumers", "1", "--high", "3", "--horizon", "1", "--no-anchor", "--json",
                 "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "ok" and data["bounds"]["samples"] == ["s0", "s1", "s0"]
    assert data["bounds"]["sizes"] == [1, 3, 1] and data["bounds"]["producers"] == 2
    assert main(["explore", "--samples", "1", "--consumers", "2", "--horizon", "1", "--two-step-ack", "--lost-replies",
                 "--max-restarts", "1", "--no-anchor", "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "ok" and data["distinct_states"] == 8288  # MCDeploymentLeases' world
    assert (data["bounds"]["two_step_ack"], data["bounds"]["lost_replies"], data["bounds"]["max_restarts"]) == (True, True, 1)
    assert main(["explore", "--samples", "2", "--sizes", "1,2,3", "--quiet"]) == 2
    assert "--sizes gives 3 sizes for --samples 2" in capsys.readouterr().err
    assert main(["explore", "--no-anchor", "--max-states", "100", "--quiet"]) == 3
    capsys.readouterr()
    assert main(["explore", "--low", "2", "--high", "2"]) == 2
    assert "store low watermark 2 must be < store high watermark 2" in capsys.readouterr().err


def test_model_imports_without_torch_or_threading():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"  # any 'import torch' now fails
        "import refqueue.model, refqueue.refs, refqueue.model.explorer, refqueue.model.explore_cli\n"
        "from refqueue.refs import FeatureSpec\n"
        "spec = FeatureSpec((2,), 'bfloat16')\n"
        "assert spec.dtype == 'bfloat16' and spec.nbytes == 4\n"
        "try:\n"
        "    spec.torch_dtype\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('torch_dtype should need torch')\n"
        "assert 'threading' not in sys.modules, 'the model pulled in threading'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_model_source_imports_nothing_from_production():
    import ast
    import pathlib

    import refqueue.model as pkg

    root = pathlib.Path(pkg.__file__).parent
    forbidden = {"torch", "threading", "refqueue.queue", "refqueue.store", "refqueue.stores", "refqueue.backends",
                 "refqueue.errors", "refqueue.loader", "refqueue.clock"}
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not any(name == f or name.startswith(f + ".") for f in forbidden), f"{path.name} imports {name}"
