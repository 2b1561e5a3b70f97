"""The kit's tamper guard: notices agent code that replaced or added attributes of the torch
(and standard library) objects a verification relies on.

One generic guard instead of per-driver lists: ``TamperGuard()`` snapshots, by identity, the
attributes of torch's modules and classes (torch, torch.Tensor and its C base, every class of
torch.nn / torch.optim / torch.autograd, torch.distributed and c10d, DDP, FSDP, dynamo and
torch.compile, torch.save / load, ...) and of the few standard-library modules a driver writes
its report with, before agent code is imported. ``changes()`` lists every callable attribute
that was replaced, every attribute added to a guarded class, and every guarded function whose
code or defaults were changed in place, since then; ``watch()`` checks
at every module forward and optimizer step (through hooks it registers), so a patch that is
undone before training returns is caught too, and the removal of those hooks is itself a
change.

Process-wide state is guarded too: hooks registered in torch's global registries (module
forward/backward and registration hooks, optimizer step hooks) by code outside torch, and the
state every module and step runs under (grad mode, inference mode, saved-tensor default hooks,
torch function and dispatch modes): ``state_changes(when)`` compares it with the snapshot at an
entry point (after the workspace is imported, at every optimizer step, when training returns),
and ``mode_switch(modules)`` checks that putting a module into eval mode and back changes none
of it. Runs in the check's driver children (it imports torch, unless the project is
torch-free: ``TamperGuard(modules=())``); the check never imports it.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import json
import os
import sys
import time
import warnings
from typing import Any

# modules whose classes (defined in the module or its submodules) and callables are guarded
MODULES = (
    "torch", "torch.functional", "torch.serialization", "torch.random", "torch.autograd",
    "torch.autograd.grad_mode", "torch.autograd.function", "torch.nn", "torch.nn.functional",
    "torch.nn.modules", "torch.nn.modules.module", "torch.nn.init", "torch.nn.utils",
    "torch.nn.parallel", "torch.nn.parallel.distributed", "torch.optim", "torch.optim.optimizer",
    "torch.optim.lr_scheduler", "torch.utils.data", "torch.multiprocessing",
    "torch.distributed", "torch.distributed.distributed_c10d", "torch.distributed.fsdp",
    "torch.distributed.tensor", "torch.compiler", "torch._dynamo", "torch._dynamo.eval_frame",
    "torch._dynamo.convert_frame", "torch._dynamo.backends.registry", "torch._C._distributed_c10d",
)
STDLIB = ("builtins", "json", "json.encoder", "os", "math", "time", "gc", "weakref", "io", "pickle",
          "copyreg", "dataclasses", "traceback")
# torch's global hook registries: a hook there runs for every module or optimizer of the process
HOOK_REGISTRIES = {
    "torch.nn.modules.module": ("_global_forward_pre_hooks", "_global_forward_hooks",
                                "_global_backward_pre_hooks", "_global_backward_hooks",
                                "_global_module_registration_hooks", "_global_parameter_registration_hooks",
                                "_global_buffer_registration_hooks"),
    "torch.optim.optimizer": ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks"),
}
CHECK_EVERY_S = 0.25  # while training runs: a patch that lives longer than this is seen (~25 ms a check)
SKIP_NAMES = {"__dict__", "__weakref__", "__doc__", "__annotations__", "__parameters__",
              "__abstractmethods__", "_abc_impl", "__slotnames__", "__wrapped__"}


def _is_callable_attr(value: Any) -> bool:
    """Code an attribute lookup can run: functions, classes, descriptors (not data objects, not
    modules: torch keeps a few runtime values, e.g. the active DDP module, as class attributes)."""
    return inspect.isroutine(value) or inspect.isclass(value) or \
        isinstance(value, (staticmethod, classmethod, property, functools.partial))


def _warm_dynamo() -> None:
    """Let dynamo make the changes it makes to torch on its first compilation (generation tags on
    Module.__init__, its wrappers of optimizers' _init_group) before the snapshot is taken."""
    import torch

    m = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(m.parameters())
    step = torch.compile(lambda: (m(torch.ones(1, 2)).sum().backward(), opt.step()), backend="eager")
    step()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()  # the warm-up's own graph breaks are nobody's


def _torch_code(value: Any, old: Any) -> bool:
    """torch's own wrapper of the original: torch swaps some attributes itself for the duration
    of a trace (torch.fx's patcher during torch.cond wraps Module.__call__ and __getattr__)."""
    fn = getattr(value, "__func__", value)
    if getattr(fn, "__wrapped__", None) is not old:
        return False
    code = getattr(fn, "__code__", None)
    torch_dir = os.path.dirname(os.path.abspath(sys.modules["torch"].__file__ or "")) + os.sep
    return code is not None and code.co_filename.startswith(torch_dir)


def _inherited(cls: type, attr: str) -> Any:
    for base in cls.__mro__[1:]:
        if attr in vars(base):
            return vars(base)[attr]
    return None


def _torch_wrapper(new: Any, old: Any) -> bool:
    """torch's own wrapper of an optimizer's ``step`` (``Optimizer.profile_hook_step``), which
    the first optimizer of a class installs on that class: the same code, wrapping the original."""
    import torch

    code = getattr(torch.optim.Optimizer.profile_hook_step(lambda *a, **k: None), "__code__", None)
    cells = [c.cell_contents for c in getattr(new, "__closure__", None) or ()]
    return getattr(new, "__code__", None) is code and getattr(new, "__wrapped__", None) is old \
        and cells == [old]


class TamperGuard:
    """Identity snapshot of the guarded objects' attributes (see the module docstring)."""

    def __init__(self, modules: tuple[str, ...] = MODULES, stdlib: tuple[str, ...] = STDLIB) -> None:
        with warnings.catch_warnings():  # deprecated torch aliases warn when looked at
            warnings.simplefilter("ignore")
            self._take(modules, stdlib)
        self.found: list[str] = []
        self._hooks: list[tuple[dict, int, Any]] = []
        self.registries = self._registries()
        self.hooks_before = {name: set(reg) for name, reg in self.registries.items()}
        self.state = self.process_state()

    def _take(self, modules: tuple[str, ...], stdlib: tuple[str, ...]) -> None:
        self.objects: dict[str, Any] = {}
        for name in (*stdlib, *modules):
            try:
                mod = importlib.import_module(name)
            except Exception:  # a build without that part (e.g. no distributed)
                continue
            self.objects[name] = mod
            for value in list(vars(mod).values()):
                if inspect.isclass(value) and (getattr(value, "__module__", "") or "").startswith(
                        ("torch", name)):
                    for cls in inspect.getmro(value):
                        if (cls.__module__ or "").startswith("torch"):
                            self.objects.setdefault(f"{cls.__module__}.{cls.__qualname__}", cls)
        if "torch" in self.objects:  # a torch-free project (``modules=()``) guards the stdlib only
            self.objects["torch.Tensor"] = sys.modules["torch"].Tensor
            _warm_dynamo()
        self.snapshot = {key: self._attrs(obj) for key, obj in self.objects.items()}
        self.code = self._code()

    @staticmethod
    def _attrs(obj: Any) -> dict[str, Any]:
        try:
            return {k: v for k, v in dict(vars(obj)).items() if k not in SKIP_NAMES}
        except TypeError:
            return {}

    def _code(self) -> dict[tuple[str, str], tuple[Any, Any, Any]]:
        """What each guarded Python function runs with: code, defaults, keyword defaults (a
        function mutated in place keeps its identity)."""
        out = {}
        for key, attrs in self.snapshot.items():
            for attr, value in attrs.items():
                fn = getattr(value, "__func__", value)
                if inspect.isfunction(fn):
                    out[(key, attr)] = (fn.__code__, fn.__defaults__, dict(fn.__kwdefaults__ or {}))
        return out

    def _registries(self) -> dict[str, dict]:
        if "torch" not in self.objects:
            return {}
        out = {}
        for mod, names in HOOK_REGISTRIES.items():
            m = importlib.import_module(mod)
            for name in names:
                reg = getattr(m, name, None)
                if isinstance(reg, dict):
                    out[f"{mod}.{name}"] = reg
        return out

    def own(self, registry: dict, key: int, fn: Any) -> None:
        """A hook of the verification's own (its removal is a change; its presence is not)."""
        self._hooks.append((registry, key, fn))

    def adopt(self) -> None:
        """Every hook registered since the snapshot is the verification's own (a probe's, installed
        before agent code is imported)."""
        for name, reg in self.registries.items():
            for key, fn in list(reg.items()):
                if key not in self.hooks_before[name]:
                    self.own(reg, key, fn)

    def _foreign_hooks(self) -> list[str]:
        """Hooks registered in torch's global registries since the snapshot by code outside torch."""
        if not self.registries:  # a torch-free project: nothing to look at
            return []
        owned = {(id(reg), key) for reg, key, _ in self._hooks}
        torch_dir = os.path.dirname(os.path.abspath(sys.modules["torch"].__file__ or "")) + os.sep
        bad = []
        for name, reg in self.registries.items():
            for key, hook in list(reg.items()):
                if key in self.hooks_before[name] or (id(reg), key) in owned:
                    continue
                fn = getattr(hook, "func", hook)  # a functools.partial
                code = getattr(getattr(fn, "__func__", fn), "__code__", None)
                if code is not None and code.co_filename.startswith(torch_dir):
                    continue  # torch's own (e.g. a tracer's, for the duration of a trace)
                bad.append(f"{name} (a process-wide hook was registered: "
                           f"{getattr(fn, '__qualname__', type(fn).__name__)})")
        return bad

    @staticmethod
    def process_state() -> dict[str, Any]:
        """What every module and optimizer step of the process runs under."""
        torch = sys.modules.get("torch")
        if torch is None:
            return {}
        return {"grad mode": torch.is_grad_enabled(),
                "inference mode": torch.is_inference_mode_enabled(),
                "saved-tensor default hooks": torch._C._autograd._top_saved_tensors_default_hooks(False)
                is not None,
                "torch function modes": torch._C._len_torch_function_stack(),
                "torch dispatch modes": torch._C._len_torch_dispatch_stack()}

    def state_changes(self, when: str, *, grad_mode: bool = True) -> list[str]:
        """The process-wide state that differs from the snapshot's at an entry point (``when``:
        e.g. "after importing the workspace"); remembered like ``check()``'s findings."""
        now = self.process_state()
        bad = [f"{k}: {_state_text(k, now[k])} {when} (before: {_state_text(k, v)})"
               for k, v in self.state.items() if now.get(k) != v and (grad_mode or k != "grad mode")]
        self._remember(bad)
        return bad

    def mode_switch(self, modules: list[Any]) -> list[str]:
        """Put each module into eval mode and back: torch's process-wide state must not move."""
        bad = []
        for m in modules:
            before, was = self.process_state(), bool(getattr(m, "training", True))
            try:
                m.eval()
                after = self.process_state()
            finally:
                m.train(was)
            name = type(m).__name__
            bad += [f"switching {name} to eval mode changed torch's {k} for the whole process "
                    f"({_state_text(k, before[k])} -> {_state_text(k, after[k])})"
                    for k in before if after.get(k) != before[k]]
        self._remember(bad)
        return bad

    def _remember(self, items: list[str]) -> None:
        for item in items:
            if item not in self.found:
                self.found.append(item)

    def changes(self) -> list[str]:
        """Guarded attributes replaced (callables) or added (on classes) since the snapshot, and
        guarded functions whose code or defaults were changed in place."""
        bad: list[str] = []
        for (key, attr), (code, defaults, kwdefaults) in self.code.items():
            fn = self.snapshot[key][attr]
            fn = getattr(fn, "__func__", fn)
            if fn.__code__ is not code or fn.__defaults__ != defaults \
                    or (fn.__kwdefaults__ or {}) != kwdefaults:
                bad.append(f"{key}.{attr} (code or defaults changed)")
        for key, obj in self.objects.items():
            before = self.snapshot[key]
            now = self._attrs(obj)
            is_class = inspect.isclass(obj)
            for attr, value in now.items():
                old = before.get(attr, _MISSING)
                if old is _MISSING:
                    if is_class and ((attr == "step" and _torch_wrapper(value, _inherited(obj, attr)))
                                     or _torch_code(value, _inherited(obj, attr))):
                        continue
                    if is_class and attr not in SKIP_NAMES:
                        bad.append(f"{key}.{attr} (added)")
                    elif not is_class and _is_callable_attr(value) and not attr.startswith("_") \
                            and key not in ("builtins", "os"):
                        bad.append(f"{key}.{attr} (added)")
                elif value is not old and (_is_callable_attr(old) or _is_callable_attr(value)) \
                        and not (attr == "step" and _torch_wrapper(value, old)) \
                        and not _torch_code(value, old):
                    bad.append(f"{key}.{attr}")
            for attr, old in before.items():
                if attr not in now and _is_callable_attr(old):
                    bad.append(f"{key}.{attr} (deleted)")
        for registry, key, fn in self._hooks:
            if registry.get(key) is not fn:
                bad.append("the verification's hooks (removed)")
        bad += self._foreign_hooks()
        return sorted(set(bad))

    def check(self) -> list[str]:
        """``changes()``, remembered: a change seen once stays reported after it is undone."""
        with warnings.catch_warnings():  # deprecated torch aliases warn when looked at
            warnings.simplefilter("ignore")
            self._remember(self.changes())
        return list(self.found)

    def watch(self) -> None:
        """Check at every module forward and optimizer step from now on (without torch there is
        neither: the check at the end of the run stays)."""
        if "torch" not in self.objects:
            return
        import torch.nn.modules.module as module_mod
        import torch.optim.optimizer as optim_mod

        last = [0.0]

        compiling = sys.modules["torch"].compiler.is_compiling

        def on_forward(*_: Any) -> None:  # at most every CHECK_EVERY_S: forwards are many
            if compiling():  # traced into a compiled forward: nothing to do there (no graph break)
                return
            now = time.monotonic()
            if now - last[0] >= CHECK_EVERY_S:
                last[0] = now
                self.check()

        def on_step(*_: Any) -> None:  # a step runs outside any forward: no mode, no saved-tensor hooks
            on_forward()
            self.state_changes("at an optimizer step", grad_mode=False)

        h1 = module_mod.register_module_forward_pre_hook(on_forward)
        h2 = optim_mod.register_optimizer_step_pre_hook(on_step)
        self.own(module_mod._global_forward_pre_hooks, h1.id, on_forward)
        self.own(optim_mod._global_optimizer_pre_hooks, h2.id, on_step)


def _state_text(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return ("enabled" if value else "disabled") if key.endswith("mode") else \
            ("installed" if value else "not installed")
    return f"{value} active"


_MISSING = object()

_ = (builtins, json, os)  # guarded standard-library modules are imported here first
