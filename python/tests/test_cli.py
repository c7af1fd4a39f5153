import os
import shutil
import subprocess
import sys
import textwrap

import strobe
from conftest import events, load

SCRIPT = textwrap.dedent("""
    import sys
    import strobe

    def work(n):
        with strobe.range("work"):
            return sum(range(n))

    def main():
        print("args", sys.argv[1:])
        work(int(sys.argv[1]))

    if __name__ == "__main__":
        main()
""")


def run(cmd, **kw):
    env = {**os.environ, "STROBE_LOG_LEVEL": "4"}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, **kw)


def test_python_m_strobe_record_traces_python_calls(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    out = tmp_path / "t.json.gz"
    r = run([sys.executable, "-m", "strobe", "record", "--python", "-o", str(out), str(script), "100", "--x"])
    assert r.returncode == 0, r.stderr
    assert "args ['100', '--x']" in r.stdout
    assert f"trace written to {out}" in r.stderr
    doc = load(out)
    py = {e["name"]: e for e in events(doc, "python_function")}
    line = {text: i + 1 for i, text in enumerate(SCRIPT.splitlines())}
    main = py[f"{script}({line['def main():']}): main"]
    work = py[f"{script}({line['def work(n):']}): work"]
    (rng,) = [e for e in events(doc, "user_annotation") if e["name"] == "work"]
    assert main["ts"] <= work["ts"] <= rng["ts"] and work["args"]["Python parent id"] == main["args"]["Python id"]


def test_python_m_strobe_record_passes_the_exit_status(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.exit(3)\n")
    out = tmp_path / "t.json"
    r = run([sys.executable, "-m", "strobe", "record", "-o", str(out), str(script)])
    assert r.returncode == 3 and out.exists()


def test_python_m_strobe_record_needs_a_script():
    r = run([sys.executable, "-m", "strobe", "record", "--python"])
    assert r.returncode == 2 and "give a script" in r.stderr


def test_the_wheels_cli_records_an_unmodified_program(tmp_path):
    cli = shutil.which("strobe", path=os.path.dirname(sys.executable))
    assert cli, "the strobe console script is not installed next to python"
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    out = tmp_path / "t.json"
    r = run([cli, "record", "-o", str(out), "--", sys.executable, str(script), "10"])
    assert r.returncode == 0, r.stderr
    names = [e["name"] for e in events(load(out), "user_annotation")]
    assert names.count("work") == 1


def test_python_m_strobe_hands_other_commands_to_the_cli(tmp_path):
    with strobe.trace(tmp_path / "t.json", activities="user_annotation"):
        with strobe.range("x"):
            pass
    r = run([sys.executable, "-m", "strobe", "summary", "--json", str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stderr
    assert '"user_annotation"' in r.stdout
    r = run([sys.executable, "-m", "strobe", "--version"])
    assert r.returncode == 0 and strobe.version() in r.stdout
