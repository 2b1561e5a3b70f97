"""Authoring helper: run the project's family-generic tests on this family (the test modules
hard-code ROOT / "task_repos"; here ROOT points at a stand-in root holding only this family).

Usage (from .): .venv/bin/python staging/dataloader_worker_rng_duplication/authoring/family_tests.py [--traces]
"""
import os
import sys
import tempfile
import traceback
from pathlib import Path

MAIN = Path(ROOT + "")
FAMILY = "dataloader_worker_rng_duplication"
SRC = MAIN / "staging" / FAMILY / FAMILY
sys.path.insert(0, str(MAIN))
fake = Path(tempfile.mkdtemp(prefix="famroot-"))
(fake / "task_repos").mkdir()
(fake / "task_repos" / FAMILY).symlink_to(SRC)
os.environ["SANDBOX_ENV_VARIANT_CACHE"] = str(fake / "cache")

import tests.test_classifier_cases as tc  # noqa: E402
import tests.test_task_suite as ts  # noqa: E402
import tests.test_variants as tv  # noqa: E402
from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402
from sandbox_env.suite.variants import Family  # noqa: E402

tv.ROOT = fake
tv.FAMILIES = [FAMILY]
reg = TaskRegistry(fake / "task_repos", allow_uncertified=True)
task = reg.get(FAMILY)
families = {FAMILY: Family(fake / "task_repos" / FAMILY)}
generated = {(FAMILY, i): families[FAMILY].generate(i) for i in range(families[FAMILY].data.count)}
runs = [
    ("suite:repo_is_genuine", lambda: ts.test_repo_is_genuine_and_gives_nothing_away(task)),
    ("suite:patch_set_rich", lambda: ts.test_patch_set_is_rich_enough(task)),
    ("suite:classifier_labels", lambda: ts.test_classifier_labels_every_known_state(task)),
    ("cases:mix", lambda: tc.test_every_task_lists_a_varied_mix(task)),
    *[(f"cases:{c['name']}", (lambda c=c: tc.test_case_gets_its_label(task, c))) for c in tc.cases(task)],
    ("variants:eight_two_test", lambda: tv.test_every_family_declares_eight_variants_with_two_test(families)),
    ("variants:deterministic", lambda: tv.test_generation_is_deterministic_and_seeds_differ(families, generated)),
    ("variants:zero_byte_for_byte", lambda: tv.test_variant_zero_is_the_folder_byte_for_byte(families, reg)),
    ("variants:compile_entry", lambda: tv.test_every_variant_compiles_and_its_entry_points_exist(families, generated)),
    ("variants:concepts_signal", lambda: tv.test_concepts_and_signal_files_follow_the_variant(generated)),
    ("variants:names_sizes", lambda: tv.test_variants_change_names_and_sizes(families, generated)),
    ("variants:patches_map_back", lambda: tv.test_transformed_patches_apply_and_map_back(families, generated)),
    ("variants:prose_quotes", lambda: tv.test_the_prose_quotes_the_variants_own_code(families, generated)),
    ("variants:inverse_rename", lambda: tv.test_the_inverse_rename_restores_every_labelled_state_label(reg, FAMILY)),
]
if "--traces" in sys.argv:
    runs += [
        ("suite:traces_fresh", lambda: ts.test_traces_are_fresh_and_agree_with_labels(task)),
        ("suite:traces_docker", lambda: ts.test_traces_come_from_docker_and_hold_no_host_paths(task)),
        ("suite:mock_verdicts", lambda: ts.test_mock_verdict_of_every_labelled_patch_equals_its_label(task)),
        ("suite:oracle", lambda: ts.test_oracle_scores_at_least_0_9_in_mock_mode(task, reg)),
    ]
bad = 0
for name, fn in runs:
    try:
        fn()
        print("PASS", name)
    except Exception:
        bad += 1
        print("FAIL", name, traceback.format_exc(limit=3)[-1500:])
print(f"{len(runs) - bad}/{len(runs)} passed")
