"""Runs that clean up and cannot collide (issue 18, item 3).

* Killing a run (SIGTERM, SIGHUP, SIGKILL) leaves no worker process behind, and rerunning the
  same command resumes.  The fast tests drive the library's runner with a stand-in task from a
  small script; the slow ones run the real command line.
* A second run on a busy output is refused with one line; a killed holder never leaves a stale
  lock, not even through a forked child that outlives it.
* Damaged files are named, with what to do; a killed run's partial CSV line is repaired and
  reported; an edited value that is not a number is refused, naming the file and line.
* A resumed run says how much was already done.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import pytest

from symattn.experiments import validation as V
from symattn.experiments.phase_diagram import (CSV_COLUMNS, load_points, read_point,
                                               run_phase_diagram)
from symattn.model import ModelParams, ParameterError
from symattn.runs import DamagedFile, OutputInUse, TidyCSV, output_lock

from conftest import assert_one_line_error

#: a run's processes must all be gone this long after the signal
GRACE = 10.0
ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- processes
def _stat(pid: int):
    """(state, parent pid) of ``pid`` or ``None`` if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _run_processes(root: int, marker: str) -> set:
    """The descendants of ``root`` (by parent pid) and every process whose command line holds
    ``marker`` (forked workers keep their parent's), ``root`` excluded."""
    pids = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    parent = {}
    found = set()
    for p in pids:
        st = _stat(p)
        if st is None:
            continue
        parent[p] = st[1]
        try:
            if marker in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace"):
                found.add(p)
        except OSError:
            pass
    frontier = {root}
    while frontier:
        kids = {p for p, pp in parent.items() if pp in frontier} - found
        found |= kids
        frontier = kids
    found.discard(root)
    found.discard(os.getpid())
    return found


def _wait_for(cond, timeout: float, what: str):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _assert_all_gone(pids, timeout=GRACE) -> float:
    """Every pid of ``pids`` ends within ``timeout`` seconds; the time it took."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not any(_alive(p) for p in pids):
            return time.monotonic() - t0
        time.sleep(0.05)
    left = {p: Path(f"/proc/{p}/cmdline").read_bytes()[:120] for p in pids if _alive(p)}
    for p in left:
        os.kill(p, signal.SIGKILL)          # do not leave them to the next test
    raise AssertionError(f"still alive {timeout} s after the parent was killed: {left}")


pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


# ----------------------------------------------------------------------------- a driver
DRIVER = textwrap.dedent('''
    """The runner of a phase diagram with a stand-in task, as the command line drives it."""
    import os, sys, time
    from symattn.experiments.phase_diagram import CSV_COLUMNS, run_phase_diagram
    from symattn.model import ModelParams
    from symattn.runs.executors import signals_raise_interrupt

    def task(params_dict, omega, settings_dict):
        with open(os.environ["CALLS"], "a") as fh:
            fh.write(f"{omega}\\n")
        while omega > 0.2 and os.environ.get("HANG"):
            time.sleep(0.05)                  # a task that takes long
        row = {k: 0.0 for k in CSV_COLUMNS}
        row.update(omega=omega, alpha_c=1 + omega, alpha_l=1.5 + omega, status="ok", curves={})
        return row

    if __name__ == "__main__":
        # a process started in the background by a non-interactive shell (CI under "&")
        # inherits SIGINT ignored, and Python then keeps it ignored: restore Ctrl-C's handler
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with signals_raise_interrupt():
                run_phase_diagram(ModelParams(), [0.2, 0.25, 0.3], sys.argv[1], task=task,
                                  note=lambda text: print(text, file=sys.stderr))
        except KeyboardInterrupt:
            print("symattn: interrupted; completed tasks are saved, rerun the same command to "
                  "resume", file=sys.stderr)
            sys.exit(130)
''')


def _start_driver(tmp_path, hang=True):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "CALLS": str(tmp_path / "calls.txt"), "PYTHONPATH": str(ROOT)}
    if hang:
        env["HANG"] = "1"
    return subprocess.Popen([sys.executable, str(driver), str(tmp_path / "pd")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"])
def test_killed_phase_diagram_leaves_no_worker_and_resumes(tmp_path, sig):
    proc = _start_driver(tmp_path)
    marker = str(tmp_path / "pd")
    try:
        # omega 0.2 finishes, the two others keep their workers busy
        _wait_for(lambda: (tmp_path / "pd" / "points" / "omega=0.200000.json").exists(), 60,
                  "the first point")
        workers = _wait_for(lambda: _run_processes(proc.pid, marker), 30, "the workers")
        assert (tmp_path / "pd" / ".lock").exists()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=GRACE)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = _assert_all_gone(workers)
    assert took < GRACE
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:       # the clean path of Ctrl-C: one line, exit 130
        assert proc.returncode == 130, err
        assert err.strip().splitlines()[-1].startswith("symattn: interrupted;")
        assert "Traceback" not in err
        assert not (tmp_path / "pd" / ".lock").exists()       # released and removed
    # the rerun takes the lock again and computes only what was missing
    (tmp_path / "calls.txt").write_text("")
    rerun = _start_driver(tmp_path, hang=False)
    out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    assert "resuming: 1 of 3 omegas already done in" in err
    assert sorted(float(w) for w in (tmp_path / "calls.txt").read_text().split()) == [0.25, 0.3]
    assert [p["omega"] for p in load_points(tmp_path / "pd")] == [0.2, 0.25, 0.3]


def test_an_interrupted_pool_does_not_wait_for_its_running_tasks():
    from symattn.runs import process_pool
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with process_pool(2) as pool:
            running = [pool.submit(time.sleep, 60) for _ in range(3)]
            _wait_for(lambda: all(p.is_alive() for p in pool._processes.values()), 10,
                      "the workers")
            workers = list(pool._processes)
            raise KeyboardInterrupt
    assert time.monotonic() - t0 < 10
    assert not any(_alive(p) for p in workers)
    assert all(f.done() for f in running)       # cancelled, or broken with the pool


SPAWN_DRIVER = textwrap.dedent('''
    import time
    from symattn.runs.executors import process_pool, signals_raise_interrupt

    def spin(x):
        while True:
            time.sleep(0.05)

    if __name__ == "__main__":
        with signals_raise_interrupt(), process_pool(2, spawn=True) as pool:
            list(pool.map(spin, range(4)))
''')


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_spawned_workers_and_resource_tracker_end_with_a_killed_parent(tmp_path, sig):
    """validate's pool: spawned workers (their command line does not name the run) and the
    multiprocessing resource tracker, found as the parent's children while it lives."""
    driver = tmp_path / "spawn_driver.py"
    driver.write_text(SPAWN_DRIVER)
    proc = subprocess.Popen([sys.executable, str(driver)], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        kids = _wait_for(lambda: (lambda k: k if len(k) >= 3 else None)(
            _run_processes(proc.pid, str(driver) + "-no-such-marker")), 60,
            "two workers and the resource tracker")
        cmdlines = [Path(f"/proc/{p}/cmdline").read_bytes() for p in kids]
        assert any(b"resource_tracker" in c for c in cmdlines)
        time.sleep(1.0)                    # the workers are computing
        proc.send_signal(sig)
        proc.communicate(timeout=GRACE)
    finally:
        if proc.poll() is None:
            proc.kill()
    _assert_all_gone(kids)


# ----------------------------------------------------------------------------- the lock
HOLDER = textwrap.dedent('''
    import os, sys, time
    from symattn.runs.lock import output_lock
    with output_lock(sys.argv[1], folder=sys.argv[2] == "folder"):
        if sys.argv[3] == "fork":
            if os.fork() == 0:             # a child that outlives its parent
                time.sleep(60)
                os._exit(0)
        print("held", flush=True)
        time.sleep(60)
''')


def _hold(tmp_path, target, folder="folder", fork="nofork"):
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    proc = subprocess.Popen([sys.executable, str(script), str(target), folder, fork],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_is_refused_and_a_killed_holder_leaves_no_stale_lock(tmp_path):
    out = tmp_path / "pd"
    holder = _hold(tmp_path, out)
    try:
        with pytest.raises(OutputInUse) as exc:
            with output_lock(out):
                pass
        msg = str(exc.value)
        assert exc.value.name == "out" and isinstance(exc.value, ParameterError)
        assert msg.startswith(f"out: {out} is in use by another symattn run (pid {holder.pid}, "
                              "started 20")
        assert msg.endswith("wait for it or choose another --out") and "\n" not in msg
        with pytest.raises(OutputInUse):         # the runner itself takes the lock
            run_phase_diagram(ModelParams(), [0.1], out, executor=ThreadPoolExecutor(1),
                              task=_never)
    finally:
        holder.kill()
        holder.wait()
    assert (out / ".lock").exists()              # the file stays after a kill ...
    with output_lock(out) as path:               # ... but not the lock
        assert path == out / ".lock"
    assert not path.exists()                     # a clean release removes the file


def _never(*args):
    raise AssertionError("a refused run must not compute")


def test_the_command_line_refuses_a_busy_folder_with_one_line(tmp_path, capsys):
    from symattn.cli import main
    out = tmp_path / "pd"
    holder = _hold(tmp_path, out)
    try:
        assert main(["phase-diagram", "--omegas", "0.3", "--out", str(out)]) == 2
        out_text, err = capsys.readouterr()
        errors = [line for line in err.splitlines() if "error" in line]
        assert errors == [err.strip().splitlines()[-1]] and "Traceback" not in err
        assert errors[0].startswith(f"symattn: error: out: {out} is in use by another symattn "
                                    f"run (pid {holder.pid}, started ")
    finally:
        holder.kill()
        holder.wait()


def test_a_file_lock_and_a_forked_child_of_a_killed_holder(tmp_path):
    """A child forked while the lock was held must not keep it once the holder is killed
    (flock is shared by fork-inherited descriptors; symattn closes them in the child)."""
    target = tmp_path / "th.json.partial"
    holder = _hold(tmp_path, target, folder="file", fork="fork")
    child = next(p for p in _run_processes(holder.pid, "no-such-marker"))
    try:
        with pytest.raises(OutputInUse):
            with output_lock(target, folder=False):
                pass
        holder.kill()
        holder.wait()
        assert _alive(child)                     # the child lives on ...
        with output_lock(target, folder=False) as path:      # ... without the lock
            assert path == tmp_path / "th.json.partial.lock"
    finally:
        holder.kill()
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_high_precision_thresholds_lock_their_checkpoint(tmp_path):
    from symattn.refine.precise import refine_thresholds
    checkpoint = tmp_path / "th.json.partial"
    holder = _hold(tmp_path, checkpoint, folder="file")
    try:
        with pytest.raises(OutputInUse, match="th.json.partial is in use"):
            refine_thresholds(ModelParams(), None, checkpoint=checkpoint)   # before any work
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_reentrant_in_one_process(tmp_path):
    with output_lock(tmp_path / "x") as p:
        with output_lock(tmp_path / "x"):
            assert p.exists()
        assert p.exists()                        # the outer block still holds it
    assert not p.exists()


def test_the_lock_names_an_unusable_output(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ParameterError, match="is a file; give a folder") as exc:
        with output_lock(tmp_path / "file"):
            pass
    assert exc.value.name == "out"


# ----------------------------------------------------------------------------- damaged files
def fake_task(params_dict, omega, settings_dict):
    row = {k: 0.0 for k in CSV_COLUMNS}
    row.update(omega=omega, alpha_c=1 + omega, alpha_l=1.5 + omega, status="ok", curves={})
    return row


@pytest.fixture
def saved_diagram(tmp_path):
    with ThreadPoolExecutor(1) as ex:
        run_phase_diagram(ModelParams(), [0.1, 0.2], tmp_path, executor=ex, task=fake_task)
    return tmp_path


def _rerun(out):
    with ThreadPoolExecutor(1) as ex:
        return run_phase_diagram(ModelParams(), [0.1, 0.2, 0.3], out, executor=ex,
                                 task=fake_task)


@pytest.mark.parametrize("damage, detail", [
    (lambda t: t[: len(t) // 2], "not valid JSON"),                      # cut by a kill
    (lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "omega"}), "no omega"),
    (lambda t: json.dumps({**json.loads(t), "omega": "0.1"}), "not a number"),
    (lambda t: json.dumps({**json.loads(t), "omega": 0.3}), "not the omega of its name"),
    (lambda t: "[1, 2]", "JSON object"),
])
def test_a_damaged_point_file_is_named_with_what_to_do(saved_diagram, damage, detail, capsys):
    path = saved_diagram / "points" / "omega=0.100000.json"
    path.write_text(damage(path.read_text()))
    for call in (lambda: _rerun(saved_diagram), lambda: load_points(saved_diagram)):
        with pytest.raises(DamagedFile, match=detail) as exc:
            call()
        assert exc.value.path == path and exc.value.name == "out"
        assert str(path) in str(exc.value) and "delete it to recompute that omega" in str(exc.value)
    from symattn.cli import main                                  # symattn plot DIR
    assert main(["plot", str(saved_diagram)]) == 2
    assert_one_line_error(capsys, str(path))


def test_a_good_point_file_reads_back(saved_diagram):
    assert read_point(saved_diagram / "points" / "omega=0.200000.json")["alpha_c"] == 1.2


@pytest.mark.parametrize("text", ['{"params": {"sigma": 0.5', "[]", '{"omegas": "abc"}'])
def test_a_damaged_metadata_file_is_named(saved_diagram, text):
    path = saved_diagram / "metadata.json"
    path.write_text(text)
    with pytest.raises(DamagedFile) as exc:
        _rerun(saved_diagram)
    assert exc.value.path == path and "delete it and rerun" in str(exc.value)


GRID = V.ValidationGrid(alphas=(1.5,), ds=(50,), seeds=2, n_test=100)
THEORY = V.TheorySettings(log2n=8, rules=2)


def _theory_rows():
    return [{"log2n": THEORY.log2n, "rule": k, "alpha": a, "branch": b, "found": False,
             "message": "not solved in this test"}
            for k in range(THEORY.rules) for a in V.theory_alpha_grid(GRID.alphas)
            for b in ("positional", "semantic")]


def _validation_folder(out, th=None):
    """A validation folder whose theory is done (branches 'not found', thresholds 'error'),
    with the simulation of seed 0 done: a rerun only simulates seed 1 (a fraction of a
    second at d = 50)."""
    from symattn.simulation.instances import SIM_COLUMNS, SIM_TYPES, simulation_task
    out.mkdir()
    theory = TidyCSV(out / "theory_rules.csv", V.THEORY_COLUMNS, V.THEORY_TYPES)
    theory.load()                                # writes the header
    theory.append(_theory_rows())
    th = th or {"settings": asdict(THEORY), "eps_lin": 0.25, "error": "not in this test"}
    (out / "theory_thresholds.json").write_text(json.dumps(th))
    sims = TidyCSV(out / "simulations.csv", SIM_COLUMNS, SIM_TYPES)
    sims.load()
    sims.append(simulation_task(ModelParams(), 50, 1.5, 0, GRID.n_test, GRID.gtol, 1.0))
    return sims


def _validate(out, notes):
    return V.run_validation(ModelParams(), GRID, THEORY, out, workers=1,
                            log=open(os.devnull, "w"), note=notes.append)


def test_a_resumed_validation_repairs_a_cut_line_and_says_so(tmp_path):
    out = tmp_path / "v"
    sims = _validation_folder(out)
    with open(sims.path, "a") as fh:
        fh.write("50,1.5,1,7")                   # killed mid-write
    notes = []
    res = _validate(out, notes)
    assert res["failed"] == []
    assert notes[0] == f"repaired {sims.path}: dropped a partial last line (cut by a killed run)"
    assert notes[1] == ("resuming: 1 of 2 simulation tasks and 2 of 2 theory rules already "
                        f"done, thresholds too in {out}")
    assert [r["seed"] for r in sims.load()] == [0, 0, 1, 1]
    assert not (out / ".lock").exists()


@pytest.mark.parametrize("cell, why", [("abc", "is not a number"),
                                       ("nan", "is not a finite number"),
                                       ("1e999", "is not a finite number")])
def test_an_edited_csv_value_is_refused_naming_file_and_line(tmp_path, cell, why):
    out = tmp_path / "v"
    sims = _validation_folder(out)
    lines = sims.path.read_text().splitlines()
    head = lines[0].split(",")
    cells = lines[2].split(",")
    cells[head.index("eps_t")] = cell
    sims.path.write_text("\n".join(lines[:2] + [",".join(cells)]) + "\n")
    before = sims.path.read_text()
    with pytest.raises(DamagedFile, match=f"line 3: eps_t = '{cell}' {why}") as exc:
        _validate(out, [])
    assert exc.value.path == sims.path and "correct or delete that line" in str(exc.value)
    assert sims.path.read_text() == before       # nothing dropped behind the user's back


def test_tidy_csv_checks_integers_and_booleans(tmp_path):
    t = TidyCSV(tmp_path / "x.csv", ("d", "ok"), {"d": int, "ok": bool})
    for line, why in (("1.5,True", "d = '1.5' is not an integer"),
                      ("2,yes", "ok = 'yes' is not True or False"),
                      ("2,True,3", "3 fields, expected 2")):
        t.path.write_text(f"d,ok\n2,False\n{line}\n")
        with pytest.raises(DamagedFile, match=f"x.csv is damaged \\(line 3: {why}\\)"):
            t.load()
    t.path.write_text("d,ok\n2,False\n\n3,True\n")
    notes = []
    assert t.load(notes.append) == [{"d": 2, "ok": False}, {"d": 3, "ok": True}]
    assert notes == [f"repaired {t.path}: dropped 1 blank line(s)"]


@pytest.mark.parametrize("text, detail", [
    ('{"settings": {"log2n": 8', "not valid JSON"),
    ('{"eps_lin": 0.25}', "not the JSON object"),
    (None, "alpha_c_err: missing or not a number"),
])
def test_a_damaged_theory_thresholds_file_is_named(tmp_path, text, detail):
    out = tmp_path / "v"
    th = {"settings": asdict(THEORY), "eps_lin": 0.25, "alpha_c": 1.2, "alpha_l": 1.5,
          "alpha_l_err": 0.01}                   # alpha_c_err edited away
    _validation_folder(out, th)
    path = out / "theory_thresholds.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(DamagedFile, match=detail) as exc:
        _validate(out, [])
    assert exc.value.path == path
    assert "delete it to recompute the theory's thresholds" in str(exc.value)


# ----------------------------------------------------------------------------- the real commands
def _cli(out, *args):
    return [sys.executable, "-m", "symattn", *args, "--out", str(out)]


PHASE = ("phase-diagram", "--omegas", "0.25,0.3", "--log2n", "8", "--rules", "2",
         "--alpha-max", "2")
VALIDATE = ("validate", "--alphas", "1.5", "--ds", "50", "--seeds", "2", "--log2n", "8",
            "--rules", "2", "--workers", "2", "--n-test", "100")


@pytest.mark.slow
@pytest.mark.parametrize("command", [PHASE, VALIDATE], ids=["phase-diagram", "validate"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killed_command_leaves_no_process_and_resumes(tmp_path, command, sig):
    """The real commands (about 80 s for the phase diagram, 50 s for validate)."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_cli(out, *command), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        seen = set()

        def enough():                            # record the run's processes while it lives
            seen.update(_run_processes(proc.pid, str(out)))
            return len(seen) >= 2 and seen
        _wait_for(enough, 90, "the workers")
        time.sleep(2.0)
        seen.update(_run_processes(proc.pid, str(out)))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=GRACE)
    finally:
        if proc.poll() is None:
            proc.kill()
    _assert_all_gone(seen)
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith("symattn: terminated (SIGTERM); "
                                                       "completed tasks are saved")
    rerun = subprocess.run(_cli(out, *command), env=env, capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr
