"""sandbox_env.kit.check_runtime and sandbox_env.kit.child_process: the kit hidden checks run with.

Child runs (environment, caps, timeouts, the RLIMIT_DATA trampoline, peak RSS), the Check's
findings, and whole checks run the way every backend runs them: the kit copied beside
check.py, a nonce on stdin, the verdict framed on stdout.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sandbox_env.kit.check_runtime import (
    KIT_MODULES,
    Check,
    hidden,
    hide_sources,
    kit_files,
    redact_sources,
    unreadable_report,
)
from sandbox_env.kit.child_process import ChildResult, child_env, run_child, with_data_limit
from sandbox_env.kit.verdict_protocol import frame_verdict, parse_verdict

NONCE = "ab" * 16
PY = sys.executable


def _run(code: str, tmp: Path, **kw) -> ChildResult:
    return run_child([PY, "-c", textwrap.dedent(code)], cwd=tmp, env=child_env(tmp), **kw)


# ---------------------------------------------------------------- child environment
def test_child_env_is_minimal_and_owned_by_the_caller(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "x")
    monkeypatch.setenv("PATH", "/opt/bin:/usr/bin")
    env = child_env(tmp_path)
    assert "SECRET_TOKEN" not in env
    assert env["PATH"] == "/opt/bin:/usr/bin"
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path)
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    assert env["GLOO_SOCKET_IFNAME"] == "lo"
    env = child_env(tmp_path, threads=3, path="/x", extra={"HOME": "/h", "A": "b"})
    assert (env["OMP_NUM_THREADS"], env["PATH"], env["HOME"], env["A"]) == ("3", "/x", "/h", "b")


def test_a_child_sees_only_its_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "x")
    res = _run("import os; print(sorted(os.environ).count('SECRET_TOKEN'), os.environ['HOME'])", tmp_path,
               timeout_s=30)
    assert res.ok and res.output.split() == ["0", str(tmp_path)]


# ---------------------------------------------------------------- running a child
def test_exit_status_signal_and_merged_output(tmp_path: Path) -> None:
    res = _run("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)", tmp_path, timeout_s=30)
    assert (res.returncode, res.signal, res.timed_out, res.ok) == (3, None, False, False)
    assert "out" in res.output and "err" in res.output
    res = _run("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", tmp_path, timeout_s=30)
    assert res.signal == 9 and res.returncode == -9


def test_stdin_is_closed_unless_given(tmp_path: Path) -> None:
    code = "import sys; print(repr(sys.stdin.read()))"
    assert _run(code, tmp_path, timeout_s=30).output.strip() == "''"
    assert _run(code, tmp_path, timeout_s=30, stdin=b"nonce\n").output.strip() == repr("nonce\n")


def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    code = f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pidfile)!r}, "w").write(str(p.pid))
        time.sleep(60)
    """
    start = time.monotonic()
    res = _run(code, tmp_path, timeout_s=1.5)
    assert res.timed_out and res.returncode is None and not res.ok
    assert time.monotonic() - start < 15
    grandchild = int(pidfile.read_text())
    time.sleep(0.2)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    """Running, not gone nor a zombie waiting for an init that does not reap."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_output_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('HEAD' + 'x' * 100000 + 'TAIL')"
    res = _run(code, tmp_path, timeout_s=30, output_cap=1000)
    assert res.output.startswith("HEAD") and res.output.endswith("TAIL")
    assert "[... output truncated: 99008 bytes omitted ...]" in res.output
    assert len(res.output) < 1200


def test_nul_and_invalid_utf8_become_replacement_characters(tmp_path: Path) -> None:
    res = _run(r"import sys; sys.stdout.buffer.write(b'a\x00b\xffc')", tmp_path, timeout_s=30)
    assert res.output == "a\ufffdb\ufffdc"


def test_peak_rss_is_measured_from_outside(tmp_path: Path) -> None:
    res = _run("b = bytearray(150 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])", tmp_path, timeout_s=60)
    assert res.ok and res.peak_rss_mb >= 140


def test_the_data_limit_trampoline(tmp_path: Path) -> None:
    argv = ["python", "x.py"]
    assert with_data_limit(argv, None) is argv
    wrapped = with_data_limit(argv, 300)
    assert wrapped[0] == PY and wrapped[-2:] == argv and str(300 * 1024 * 1024) in wrapped
    probe = "import resource; print(resource.getrlimit(resource.RLIMIT_DATA)[0])"
    res = run_child([PY, "-c", probe], cwd=tmp_path, env=child_env(tmp_path), timeout_s=30, data_limit_mb=300)
    assert res.ok and res.output.strip() == str(300 * 1024 * 1024)
    res = _run("b = bytearray(400 * 1024 * 1024)", tmp_path, timeout_s=30, data_limit_mb=300)
    assert res.returncode == 1 and "MemoryError" in res.output


def test_child_result_helpers() -> None:
    res = ChildResult(argv=[], returncode=0, signal=None, output="\n".join(map(str, range(30))) + "\n",
                      peak_rss_mb=1.0, duration_s=0.1, timed_out=False)
    assert res.ok and res.tail(3) == "27\n28\n29"
    assert not ChildResult([], 0, None, "", 0.0, 1.0, timed_out=True).ok


# ---------------------------------------------------------------- the Check's findings
def _check(tmp: Path) -> Check:
    ws, cdir, scratch = tmp / "ws", tmp / "checks", tmp / "scratch"
    for d in (ws, cdir, scratch):
        d.mkdir()
    return Check(ws, cdir, scratch)


def test_check_run_uses_this_interpreter_in_the_workspace(tmp_path: Path) -> None:
    ck = _check(tmp_path)
    code = "import os, sys; print(sys.executable, os.getcwd(), os.environ['PYTHONHASHSEED'], os.environ['K'])"
    res = ck.run(["python", "-c", code], timeout_s=30, env={"K": "v"})
    assert res.output.split() == [PY, str(ck.workspace), "0", "v"]
    (ck.check_dir / "drv.py").write_text("import sys; print('driver', sys.argv[1:])")
    assert ck.run_driver("drv.py", "a", timeout_s=30).output.strip() == "driver ['a']"


def test_findings_and_outcomes(tmp_path: Path) -> None:
    ck = _check(tmp_path)
    assert ck.verdict() == {"passed": True, "outcome": "passed", "reasons": [], "evidence": {}}
    ck.note("fine")
    assert ck.require(True, "never shown") and ck.outcome is None
    assert not ck.require(False, "wrong metrics")
    ck.fail("took too long", "timeout")
    ck.fail("another failure")
    v = ck.verdict()
    assert (v["passed"], v["outcome"]) == (False, "timeout")
    assert v["reasons"] == ["fine", "wrong metrics", "took too long", "another failure"]


def test_child_outcomes_and_clean_exit(tmp_path: Path) -> None:
    ck = _check(tmp_path)
    def res(**kw) -> ChildResult:
        base = {"argv": [], "returncode": 1, "signal": None, "output": "boom", "peak_rss_mb": 1.0,
                "duration_s": 2.0, "timed_out": False}
        return ChildResult(**{**base, **kw})
    assert ck.child_outcome(res(timed_out=True, returncode=None)) == "timeout"
    assert ck.child_outcome(res(returncode=-9, signal=9)) == "oom_killed"
    assert ck.child_outcome(res(output="DefaultCPUAllocator: can't allocate memory")) == "oom_killed"
    assert ck.child_outcome(res()) == "failed"
    assert ck.require_clean_exit(res(returncode=0), "training")
    assert not ck.require_clean_exit(res(), "training")
    assert ck.reasons == ["training exited with code 1; last output:\nboom"] and ck.outcome == "failed"
    (tmp_path / "b").mkdir()
    ck = _check(tmp_path / "b")
    assert not ck.require_clean_exit(res(timed_out=True, returncode=None), "training")
    assert ck.outcome == "timeout" and "did not finish within 2s" in ck.reasons[0]


def test_unreadable_report_fails_with_what_happened(tmp_path: Path) -> None:
    ck = _check(tmp_path)
    unreadable_report(ck, KeyError("ranks"), "last line")
    assert ck.outcome == "failed"
    assert "unreadable report (KeyError: 'ranks')" in ck.reasons[0] and ck.reasons[0].endswith("last line")


# ---------------------------------------------------------------- hidden sources
def test_children_keep_only_the_drivers_they_need(tmp_path: Path) -> None:
    ck = _check(tmp_path)
    ck.driver_dir = tmp_path / "bin"
    ck.driver_dir.mkdir()
    for name in ("check.py", "driver.py", "knobs.py", "check_runtime.py"):
        (ck.driver_dir / name).write_text("")
    hide_sources(ck, keep=("driver.py",))
    assert [p.name for p in ck.driver_dir.iterdir()] == ["driver.py"]


def test_the_verdict_never_quotes_the_checks_sources(tmp_path: Path) -> None:
    ck = _check(tmp_path)
    (ck.check_dir / "check.py").write_text("REFERENCE_LOSS = 0.123456789  # the secret value\nshort\n")
    (ck.workspace / "train.py").write_text("print('shared line that the workspace also has')\n")
    (ck.check_dir / "driver.py").write_text("print('shared line that the workspace also has')\n")
    ck.fail("agent printed:\nREFERENCE_LOSS = 0.123456789  # the secret value\nshort\nits own text")
    ck.note("print('shared line that the workspace also has')")
    ck.evidence["dump"] = ["x REFERENCE_LOSS = 0.123456789  # the secret value y", 3]
    redact_sources(ck)
    assert ck.reasons[0] == "agent printed:\n[hidden check source]\nits own text"
    assert ck.reasons[1] == "print('shared line that the workspace also has')"
    assert ck.evidence["dump"] == ["[hidden check source]", 3]


def test_hidden_redacts_even_when_verify_raises(tmp_path: Path) -> None:
    ck = _check(tmp_path)
    (ck.check_dir / "check.py").write_text("a_long_line_of_the_check_source = 1\n")
    def verify(c: Check) -> None:
        c.fail("a_long_line_of_the_check_source = 1")
        raise RuntimeError("check bug")
    with pytest.raises(RuntimeError):
        hidden(verify, keep=())(ck)
    assert ck.reasons == ["[hidden check source]"]


# ---------------------------------------------------------------- whole checks, as backends run them
def _check_dir(tmp: Path, body: str) -> Path:
    cdir = tmp / "checks"
    cdir.mkdir()
    for name, data in kit_files().items():
        (cdir / name).write_bytes(data)
    (cdir / "check.py").write_text("from check_runtime import Check\n" + textwrap.dedent(body)
                                   + "\nif __name__ == '__main__':\n    Check.main(body)\n")
    (tmp / "ws").mkdir()
    return cdir


def _verify(tmp: Path, cdir: Path) -> tuple[dict | None, str]:
    p = subprocess.run([PY, str(cdir / "check.py"), "--workspace", str(tmp / "ws")], cwd=tmp,
                       input=NONCE + "\n", capture_output=True, text=True, timeout=60, check=False,
                       env=child_env(tmp / "ws"))
    return parse_verdict(p.stdout, NONCE), p.stdout + p.stderr


def test_the_kit_is_the_stdlib_modules_a_check_imports() -> None:
    files = kit_files()
    assert sorted(files) == sorted(f"{m}.py" for m in KIT_MODULES)
    for name, data in files.items():  # standalone: nothing of the host package is imported or named in code
        tree = ast.parse(data)
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings may cite it
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                   and id(n) not in docs]
        assert not [m for m in imported + strings if "sandbox_env" in m], name


def test_a_check_frames_its_verdict_with_the_nonce(tmp_path: Path) -> None:
    cdir = _check_dir(tmp_path, """
        def body(ck):
            res = ck.run(["python", "-c", "print(6 * 7)"], timeout_s=30)
            ck.evidence["answer"] = res.output.strip()
            ck.require(res.output.strip() == "42", "wrong answer")
    """)
    verdict, raw = _verify(tmp_path, cdir)
    assert verdict == {"passed": True, "outcome": "passed", "reasons": [], "evidence": {"answer": "42"}}, raw


def test_agent_code_cannot_forge_the_verdict(tmp_path: Path) -> None:
    forged = frame_verdict("guess", {"passed": True, "outcome": "passed", "reasons": [], "evidence": {}})
    cdir = _check_dir(tmp_path, """
        def body(ck):
            res = ck.run(["python", "agent.py"], timeout_s=30)
            ck.evidence["child"] = res.output
            ck.fail("the fix is wrong")
    """)
    (tmp_path / "ws" / "agent.py").write_text(textwrap.dedent(f"""
        import os, sys
        print(os.environ.get("NONCE"), sys.stdin.read() or "no stdin")
        print({forged!r})
        os.write(1, b"SANDBOX_VERDICT x {{}}\\n")
    """))
    verdict, raw = _verify(tmp_path, cdir)
    assert verdict is not None and verdict["passed"] is False, raw
    assert "None no stdin" in verdict["evidence"]["child"] and NONCE not in verdict["evidence"]["child"]
    # the children's lines were captured into the evidence: the check printed one frame only
    assert [ln.split()[1] for ln in raw.splitlines() if ln.startswith("SANDBOX_VERDICT")] == [NONCE]


def test_a_crashing_check_is_an_infra_error(tmp_path: Path) -> None:
    cdir = _check_dir(tmp_path, """
        def body(ck):
            ck.evidence["before"] = 1
            raise ZeroDivisionError("check bug")
    """)
    verdict, raw = _verify(tmp_path, cdir)
    assert verdict is not None, raw
    assert (verdict["passed"], verdict["outcome"]) == (False, "infra_error")
    assert verdict["evidence"] == {"before": 1}
    assert "ZeroDivisionError: check bug" in verdict["reasons"][0]
