"""Run tests/test_task_suite.py's per-task tests on this family (the suite reads ROOT/task_repos)."""
import sys
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import tests.test_task_suite as ts
from sandbox_env.suite.tasks import TaskRegistry
root = Path(__file__).resolve().parents[1]
task = TaskRegistry(root).get("missing_eval_mode_bn_stats_drift")
fails = 0
for name in ("test_repo_is_genuine_and_gives_nothing_away", "test_patch_set_is_rich_enough",
             "test_classifier_labels_every_known_state", "test_traces_are_fresh_and_agree_with_labels",
             "test_traces_come_from_docker_and_hold_no_host_paths", "test_mock_verdict_of_every_labelled_patch_equals_its_label"):
    try:
        getattr(ts, name)(task); print("PASS", name)
    except Exception as e:
        fails += 1; print("FAIL", name, type(e).__name__, str(e)[:300])
print("fails", fails)
