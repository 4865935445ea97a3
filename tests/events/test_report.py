"""refqueue report: a self-contained HTML page whose plots render in real headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from events_helpers import ROOT


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PLOTS = ("residency", "rates", "lease-ages", "redeliveries", "bottleneck")

# Written into the page by the test (not by the report): measures every plot
# and what is drawn in it, once the browser has laid the page out.
MEASURE = """<script>
window.addEventListener('load', () => {
  const out = {};
  for (const svg of document.querySelectorAll('svg.plot')) {
    const box = svg.getBoundingClientRect();
    const drawn = [...svg.querySelectorAll('polyline, rect')].map(e => e.getBBox())
      .filter(b => b.width > 0 && b.height > 0).length;
    out[svg.id] = {width: box.width, height: box.height, drawn: drawn};
  }
  const pre = document.createElement('pre');
  pre.id = 'render-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def run_report(*args):
    return subprocess.run([sys.executable, "-m", "refqueue.cli", "report", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def test_report_is_one_self_contained_page(stress_log, tmp_path):
    out = tmp_path / "report.html"
    proc = run_report(str(stress_log), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)  # nothing fetched
    assert "<script" not in page
    for plot in PLOTS:
        assert f'id="{plot}"' in page
    assert 'class="band"' in page
    # whether the stress run paused depends on its timing (a loaded machine may never
    # reach the high watermark): the shading follows the log
    assert ('class="paused"' in page) == ('"ev":"pause"' in stress_log.read_text())


def test_the_paused_intervals_are_shaded(tmp_path):
    from refqueue._bench_queue import CounterStore, clone_refs
    from refqueue.clock import ManualClock
    from refqueue.errors import PutAborted
    from refqueue.events import EventLog, JsonlSink
    from refqueue.queue import SampleRefQueue, VisibilityTimeout

    refs = clone_refs(3, "p")
    size = refs[0].estimated_bytes
    sink = JsonlSink(tmp_path / "paused.jsonl")
    store = CounterStore()
    queue = SampleRefQueue(store, VisibilityTimeout(5.0), high_watermark_bytes=2 * size,
                           low_watermark_bytes=size, clock=ManualClock(0.0), events=EventLog(sink))
    for ref in refs:
        store.hold(ref)
    queue.put(refs[0])
    queue.put(refs[1])
    with pytest.raises(PutAborted):
        queue.put_blocks_until_below(refs[2], abort_when=lambda: True)  # resident 3 sizes >= high: pauses
    assert queue.is_paused
    queue.ack(queue.acquire_nowait())
    queue.ack(queue.acquire_nowait())
    queue.put_blocks_until_below(refs[2], abort_when=lambda: True)  # resident 1 size <= low: resumes, enqueued
    sink.close()
    out = tmp_path / "report.html"
    proc = run_report(str(tmp_path / "paused.jsonl"), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert 'class="paused"' in out.read_text()


def test_report_refuses_bad_input(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"ev": "put"}\n')
    proc = run_report(str(bad), "--html", str(tmp_path / "out.html"))
    assert proc.returncode == 2 and "bad.jsonl:1: record seq=None ev='put' has no 'seq' field" in proc.stderr
    bad.write_text('{"ev": "put", "q": 1, "seq": 1, "pid": 1, "t": 0.0, "sample": "s"}\n')
    proc = run_report(str(bad), "--html", str(tmp_path / "out.html"))
    assert proc.returncode == 2 and "no queue open record" in proc.stderr
    proc = run_report(str(bad), "--html", str(tmp_path / "missing" / "out.html"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_report_never_writes_over_its_log_nor_leaves_half_a_page(stress_log, tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_bytes(stress_log.read_bytes())
    (tmp_path / "link.html").hardlink_to(log)
    for out in (log, tmp_path / "link.html"):  # the log itself, or the log under another name
        proc = run_report(str(log), "--html", str(out))
        assert proc.returncode == 2 and "writing the page would destroy the log: pass another file" in proc.stderr
        assert log.read_bytes() == stress_log.read_bytes()
    old = tmp_path / "old.html"
    old.write_text("the old page")
    # a write that fails partway (a file-size limit of 4 KiB) leaves the old page whole and no temporary
    limit = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)); "
    script = limit + "sys.argv = ['refqueue', 'report', sys.argv[1], '--html', sys.argv[2]]; runpy.run_module('refqueue.cli', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", script, str(log), str(old)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert "cannot write" in proc.stderr and "nothing was written (a file that was there is as it was)" in proc.stderr
    assert old.read_text() == "the old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.html", "old.html", "run.jsonl"]
    proc = run_report(str(log), "--html", str(tmp_path / "page.html"), "--bins", "10001")
    assert proc.returncode == 2 and "--bins must be from 1 to 10,000" in proc.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (scripts/setup.sh installs it)")
def test_plots_render_in_headless_chromium(stress_log, tmp_path):
    out = tmp_path / "report.html"
    assert run_report(str(stress_log), "--html", str(out)).returncode == 0
    probe = tmp_path / "probe.html"
    probe.write_text(out.read_text().replace("</body>", MEASURE + "</body>"))
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    match = re.search(r'<pre id="render-check">(.*?)</pre>', proc.stdout)
    assert match, proc.stdout[-2000:] + proc.stderr[-2000:]
    sizes = json.loads(match.group(1).replace("&quot;", '"'))
    assert set(sizes) == set(PLOTS)
    for plot, box in sizes.items():
        assert box["width"] > 0 and box["height"] > 0, (plot, box)
        assert box["drawn"] > 0, (plot, box)  # a line or bar of non-zero size inside


def test_report_draws_the_queue_asked_for(tmp_path):
    from events_helpers import refs

    from refqueue._bench_queue import CounterStore
    from refqueue.events import EventLog, RingSink
    from refqueue.queue import SampleRefQueue

    ring = RingSink()
    log = EventLog(ring)
    queues = [SampleRefQueue(CounterStore(), events=log) for _ in range(2)]
    for k, q in enumerate(queues):
        for ref in refs(3 + k, prefix=f"q{k}-"):
            q.store.hold(ref)
            q.put(ref)
    path = tmp_path / "two.jsonl"
    ring.dump(path)
    out = tmp_path / "q2.html"
    proc = run_report(str(path), "--html", str(out), "--queue", "2")
    assert proc.returncode == 0, proc.stderr
    assert "<td>puts</td><td>4</td>" in out.read_text()
    proc = run_report(str(path), "--html", str(out), "--queue", "3")
    assert proc.returncode == 2 and "no queue 3 in the log (its queues: [1, 2])" in proc.stderr
