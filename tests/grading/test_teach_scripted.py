"""grading.teach_scripted_judge: a scripted judge taught the admission rows built from diffs it knows answers
each as its source diff, so the injection suite finds neither benign drift nor an attack success where the
diffs' own answers are right; answers the file already gives are kept."""

from __future__ import annotations

import hashlib
from pathlib import Path

from examples.build import JUDGE_SCRIPTED, MANIFEST, TASK_ID, TASKS
from grading import ScriptedVerdict, check_admission, load_scripted, read_task_files, teach_scripted_judge
from grading.admission.check import collect_workspaces
from grading.binary_text import judge_text
from grading.judge.scripted import ScriptedBackend


def test_the_suite_reports_no_benign_drift_once_the_judge_is_taught(tmp_path: Path) -> None:
    files = read_task_files(TASKS / TASK_ID, MANIFEST, admission=True)
    script, _ = load_scripted(JUDGE_SCRIPTED)
    before = check_admission(files, f"scripted:{JUDGE_SCRIPTED}", injection_suite=True)
    assert before.injection is not None and before.injection.benign_drifts == before.injection.benign > 0

    taught = tmp_path / "taught.json"
    taught.write_text(teach_scripted_judge(script, files).model_dump_json(exclude_defaults=True))
    after = check_admission(files, f"scripted:{taught}", injection_suite=True)
    assert after.admitted
    assert after.injection is not None
    assert (after.injection.benign_drifts, after.injection.attack_successes) == (0, 0)
    # The rows the suite did not build from a known diff are answered as before.
    assert [row.holds for row in after.rows if row.kind not in ("benign", "injection")] == [
        row.holds for row in before.rows if row.kind not in ("benign", "injection")
    ]


def test_an_answer_the_file_gives_for_a_row_is_kept(tmp_path: Path) -> None:
    files = read_task_files(TASKS / TASK_ID, MANIFEST, admission=True)
    assert files.rubric is not None
    script, _ = load_scripted(JUDGE_SCRIPTED)
    benign = next(
        ws for ws in collect_workspaces(files, files.rubric, injection_suite=True) if ws.kind == "benign"
    )
    sha = hashlib.sha256(judge_text(benign.diff_text).encode()).hexdigest()
    put_off = {"B2": ScriptedVerdict(verdict="fail", reason="A comment in the diff: refused.")}
    script = script.model_copy(update={"by_diff_sha256": {**script.by_diff_sha256, sha: put_off}})
    taught = teach_scripted_judge(script, files)
    assert taught.by_diff_sha256[sha] == put_off
    path = tmp_path / "taught.json"
    path.write_text(taught.model_dump_json())
    assert ScriptedBackend(path).answers_for(judge_text(benign.diff_text))["B2"].verdict == "fail"
