"""Author helper: writes classifier_cases.toml (states beyond the labelled patches) from string edits."""
import make_patches as mp

SOL_LOAD, LEG = mp.SOL_LOAD, mp.LEG
CASES = []


def case(label, sol=True):
    def deco(fn):
        CASES.append((fn.__name__, label, sol, fn))
        return fn
    return deco


@case("fixed")
def fixed_add_safe_globals_at_import(b):
    mp.edit(b, "checkpointing.py", LEG, LEG + "\ntorch.serialization.add_safe_globals(LEGACY_GLOBALS)")
    mp.edit(b, "checkpointing.py", SOL_LOAD, "    return to_plain(torch.load(path, map_location=map_location))")


@case("fixed")
def fixed_dtype_classes_by_name(b):
    mp.edit(b, "checkpointing.py", LEG, '''LEGACY_GLOBALS = [scalar, _reconstruct, np.ndarray, np.dtype, PosixPath, np.dtypes.Float32DType,
                  np.dtypes.Float64DType, np.dtypes.UInt32DType, np.dtypes.Int64DType]''')


@case("legacy_unreadable")
def legacy_allowlist_stops_at_first_errors(b):
    mp.edit(b, "checkpointing.py", LEG, "LEGACY_GLOBALS = [scalar, _reconstruct, np.ndarray, np.dtype, PosixPath]")


@case("unsafe_load")
def unsafe_pickle_loads_of_data_pkl(b):
    mp.edit(b, "checkpointing.py", SOL_LOAD, '''    import pickle
    import zipfile
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("data.pkl"))
        return to_plain(pickle.loads(z.read(name)))''')


@case("unsafe_load")
def unsafe_best_restore_weights_only_false(b):
    mp.edit(b, "callbacks.py", "            state = load_checkpoint(path)\n",
            "            state = torch.load(path, map_location=\"cpu\", weights_only=False)\n")
    mp.edit(b, "callbacks.py", "import numpy as np\n", "import numpy as np\nimport torch\n")


@case("lost_state")
def lost_state_rng_not_restored(b):
    mp.edit(b, "trainer.py", "        seeding.set_rng_state(state[\"rng\"])\n", "")


@case("UNSURE")
def unsure_loader_built_by_exec(b):
    mp.edit(b, "checkpointing.py", SOL_LOAD, '''    scope = {"torch": torch, "path": path, "m": map_location}
    exec("state = torch.load(path, map_location=m, weights_only=True)", scope)
    return to_plain(scope["state"])''')


@case("UNSURE")
def unsure_model_changed(b):
    mp.edit(b, "models.py", "        self.head = nn.Linear(hidden_dim, n_classes)", "        self.head = nn.Linear(hidden_dim, n_classes, bias=False)")


@case("fixed")
def fixed_tensors_for_arrays(b):
    mp.edit(b, "checkpointing.py", "        return obj.tolist()", "        return torch.from_numpy(obj.copy())")


@case("fixed")
def fixed_safe_globals_inline_list(b):
    mp.edit(b, "checkpointing.py", "    with torch.serialization.safe_globals(LEGACY_GLOBALS):",
            "    with torch.serialization.safe_globals([scalar, _reconstruct, np.ndarray, np.dtype, PosixPath,\n"
            "                                           np.dtypes.Float32DType, np.dtypes.Float64DType, np.dtypes.UInt32DType]):")


@case("new_unreadable")
def new_unreadable_path_kept(b):
    mp.edit(b, "checkpointing.py", "    if isinstance(obj, os.PathLike):\n        return os.fspath(obj)\n", "")


@case("new_unreadable")
def new_unreadable_numpy_scalars_kept(b):
    mp.edit(b, "checkpointing.py", "    if isinstance(obj, np.generic):\n        return obj.item()\n", "")


@case("lost_state")
def lost_state_normaliser_refit(b):
    mp.edit(b, "trainer.py", "        self.normalizer.load_state_dict(state[\"normalizer\"])\n", "")


@case("unsafe_load")
def unsafe_allowlist_os_system(b):
    mp.edit(b, "checkpointing.py", LEG, LEG + "\nLEGACY_GLOBALS.append(os.system)")


@case("UNSURE")
def unsure_weights_only_from_config(b):
    mp.edit(b, "checkpointing.py", "        state = torch.load(path, map_location=map_location, weights_only=True)",
            "        state = torch.load(path, map_location=map_location, weights_only=STRICT)")
    mp.edit(b, "checkpointing.py", LEG, LEG + "\nSTRICT = os.environ.get(\"CKPT_STRICT\", \"1\") == \"1\"")


if __name__ == "__main__":
    out = ["# weights_only_load_rejects_checkpoint: classifier cases beyond the labelled patches (written by",
           "# ../make_cases.py). tests/test_classifier_cases.py applies each patch to repo/ and expects the label.", "",
           "min_cases = 15", "min_fixed = 4", "min_unsure = 3", ""]
    for name, label, sol, fn in CASES:
        b = mp.base(sol)
        fn(b)
        text = mp.subprocess.run(["diff", "-ruN", "a", "b"], cwd=mp.W, capture_output=True, text=True).stdout
        assert "'''" not in text
        out += ["[[case]]", f'name = "{name}"', f'label = "{"unsure" if label == "UNSURE" else label}"',
                "patch = '''", text.rstrip("\n"), "'''", ""]
    (mp.FAM / "classifier_cases.toml").write_text("\n".join(out))
    print(len(CASES), "cases")
