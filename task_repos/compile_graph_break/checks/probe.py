"""compile_graph_break's probe in the kit driver: dynamo graph/break counts and compiled numerics.

``install`` registers the counting backend the driver's config names (aot_eager, counting
compilations and runs of the compiled graph, its outputs scaled by 1 + the verification's
drawn secret, so that losses show whether the compiled graph ran: a count could be forged).
``report`` (after ``train``) measures the workspace's model, freshly built from the drawn
config: ``torch._dynamo.explain`` graph and break counts, and logits plus gradient
fingerprints of the model called eagerly and through
``torch.compile(backend="eager", fullgraph=True)`` on probe batches that drive both sides of
the update limit (the small ones keep every update, the large ones rescale every one).
"""

import importlib

import torch
import torch._dynamo
import torch.nn.functional as F
from torch._dynamo.backends.registry import lookup_backend, register_backend
from torch._dynamo.utils import counters

SCALES = (0.02, 0.1, 0.5, 2.0, 8.0, 40.0)
COUNTS = {"compiles": 0, "runs": 0}
_aot_eager = lookup_backend("aot_eager")
_dynamo_config = torch._dynamo.config.get_config_copy()


SCALE = [1.0]


def _backend(gm, example_inputs):
    COUNTS["compiles"] += 1
    compiled = _aot_eager(gm, example_inputs)

    def run(*args):
        COUNTS["runs"] += 1
        out = compiled(*args)
        return [o * SCALE[0] if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in out]

    return run


def install(ctx) -> None:
    # the compiled graph's outputs are scaled by a factor drawn per verification: the training
    # losses match the reference run's only if the graph compiled with Config.backend really ran
    SCALE[0] = 1.0 + ctx["spec"]["secret"]
    register_backend(compiler_fn=_backend, name="check_counting_aot_eager")


def _outputs(fn, params, batches, seed):
    for p in params.values():
        p.grad = None
    logits_all, total = [], None
    for x, y in batches:
        logits = fn(x)
        logits_all.append(logits.detach().reshape(-1).tolist())
        loss = F.cross_entropy(logits, y)
        total = loss if total is None else total + loss
    total.backward()
    gen = torch.Generator().manual_seed(seed)
    grads = {}
    for name, p in params.items():
        g = (p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).double()
        grads[name] = [float(g.norm()), float(g @ torch.randn(p.numel(), generator=gen, dtype=torch.float64))]
    return {"logits": logits_all, "grads": grads}


def _err(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:1500]


def report(ctx) -> dict:
    cfg = ctx["cfg"]
    out = {"backend": dict(COUNTS), "errors": {},
           "graph_breaks": {str(k): int(v) for k, v in counters["graph_break"].items()}}
    for key, value in _dynamo_config.items():  # workspace code may have changed dynamo's config
        if torch._dynamo.config.get_config_copy().get(key) != value:
            setattr(torch._dynamo.config, key, value)
    model_mod = importlib.import_module("model")
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    batches = [(torch.randn(16, cfg.num_features, generator=gen) * s,
                torch.randint(0, cfg.num_classes, (16,), generator=gen)) for s in SCALES]

    def fresh():
        torch._dynamo.reset()
        torch.manual_seed(cfg.seed + 2)
        return model_mod.build_model(cfg)

    try:
        ex = torch._dynamo.explain(fresh())(batches[-1][0])
        out["explain"] = {"graph_count": ex.graph_count, "graph_break_count": ex.graph_break_count,
                          "break_reasons": [str(getattr(b, "reason", b)).split("\n")[0][:300]
                                            for b in ex.break_reasons][:5]}
    except BaseException as exc:
        out["errors"]["explain"] = _err(exc)
    for phase in ("eager", "compiled"):
        try:
            model = fresh()
            fn = model if phase == "eager" else torch.compile(model, backend="eager", fullgraph=True)
            out[phase] = _outputs(fn, dict(model.named_parameters()), batches, cfg.seed + 3)
        except BaseException as exc:
            out["errors"][phase] = _err(exc)
    return out
