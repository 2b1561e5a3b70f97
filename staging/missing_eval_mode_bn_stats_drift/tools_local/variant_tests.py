"""Run tests/test_variants.py's family-parametrised tests on this family (the suite hard-codes
task_repos and its four families)."""
import inspect, sys, os
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
os.environ.setdefault("SANDBOX_ENV_VARIANT_CACHE", "/tmp/mev_vcache_wt")
import tests.test_variants as tv
from sandbox_env.suite.variants import Family
from sandbox_env.suite.tasks import TaskRegistry
FAM = Path(__file__).resolve().parents[1] / "missing_eval_mode_bn_stats_drift"
families = {FAM.name: Family(FAM)}
generated = {(f.name, i): f.generate(i) for f in families.values() for i in range(f.data.count)}
open_tasks = TaskRegistry(FAM.parent, allow_uncertified=True)
names = ["test_every_family_declares_eight_variants_with_two_test", "test_generation_is_deterministic_and_seeds_differ",
         "test_variant_zero_is_the_folder_byte_for_byte", "test_every_variant_compiles_and_its_entry_points_exist",
         "test_concepts_and_signal_files_follow_the_variant", "test_variants_change_names_and_sizes",
         "test_transformed_patches_apply_and_map_back", "test_the_incident_report_is_renamed_and_has_a_hook_for_the_variants_own_log",
         "test_the_reports_figures_follow_the_variants_sizes", "test_the_prose_quotes_the_variants_own_code",
         "test_the_inverse_rename_restores_every_labelled_state_label"]
ROOT = Path("/tmp/mev_root_wt")  # task_repos/<family> there: a symlink to the family
(ROOT / "task_repos").mkdir(parents=True, exist_ok=True)
if not (ROOT / "task_repos" / FAM.name).exists():
    (ROOT / "task_repos" / FAM.name).symlink_to(FAM)
tv.ROOT = ROOT
fails = 0
for n in names:
    fn = getattr(tv, n)
    args = {"families": families, "generated": generated, "open_tasks": open_tasks, "family": FAM.name}
    kw = {p: args[p] for p in inspect.signature(fn).parameters if p in args}
    missing = [p for p in inspect.signature(fn).parameters if p not in args]
    if missing:
        print("SKIP", n, missing); continue
    try:
        fn(**kw); print("PASS", n)
    except Exception as e:
        fails += 1; print("FAIL", n, type(e).__name__, str(e)[:1500])
print("fails", fails)
