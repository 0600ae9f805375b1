"""Start-up of the ``rubric`` command: what each subcommand costs before it does any work.

    .venv/bin/python benchmarks/startup.py [--repeat N]

Each subcommand imports only its own module (grading/cli/rubric.py): scope, integrity and validate load no
part of the judge (asyncio, the SQLite verdict cache), and no subcommand loads a provider SDK unless a judge
of that provider runs. The reference is the interpreter alone (``python -c pass``) and pydantic, which every
subcommand needs to read a rubric.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO_ROOT, RUBRIC, Row, bench_rubric, env, git, machine, print_table, time_command

SDKS = ("anthropic", "openai", "asyncio", "sqlite3")
PROBE = """
import json, sys
from grading.cli.rubric import main
main(sys.argv[1:])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded(argv: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env(),
                         cwd=REPO_ROOT, check=False).stdout.splitlines()  # fmt: skip
    return [m for m in json.loads(out[-1]) if m in SDKS] if out else ["(failed)"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "a.py").write_text("a\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        (repo / "a.py").write_text("b\n")
        run_dir = root / "run"
        run_dir.mkdir()
        (run_dir / "workspace.diff").write_bytes(git(repo, "diff", "HEAD"))
        task = root / "task"
        task.mkdir()
        rubric_json = bench_rubric(["**"])
        (task / "rubric.json").write_text(json.dumps(rubric_json))
        (task / "task.json").write_text(json.dumps({"id": rubric_json["task"], "prompt": "Fix it."}))
        manifest = root / "repo_manifest.yaml"
        manifest.write_text('tests:\n  globs: ["tests/**"]\n')
        script = root / "judge.json"
        script.write_text(json.dumps({"default": {}}))
        commands = {
            "`rubric validate`": ["validate", str(task / "rubric.json")],
            "`rubric scope`": ["scope", str(task), str(run_dir)],
            "`rubric integrity`": ["integrity", str(task), str(run_dir), "--manifest", str(manifest)],
            "`rubric judge --render-only` (scripted)": [
                "judge", str(task), str(run_dir), "--judge", f"scripted:{script}", "--render-only"],
        }  # fmt: skip
        python = time_command([sys.executable, "-c", "pass"], args.repeat)
        pydantic = time_command([sys.executable, "-c", "import pydantic"], args.repeat)
        rows = [Row("`python -c 'import pydantic'`", pydantic, "`python -c pass`", python, None)]
        notes = []
        for label, argv in commands.items():
            seconds = time_command([*RUBRIC, *argv], args.repeat)
            rows.append(Row(label, seconds, "`python -c 'import pydantic'`", pydantic, None))
            notes.append(f"{label} loads: {', '.join(loaded(argv)) or 'none'} (of {', '.join(SDKS)})")
    print_table(
        "`rubric` start-up",
        rows,
        ["; ".join(notes) + ".", f"Fastest of {args.repeat} runs each; {machine()}."],
    )


if __name__ == "__main__":
    main()
