"""Same-process A/B of the XLA tuning tricks in the library: is each worth it?

The library has one path, with every trick; this script builds the path without one:

* ``pins``: ``physics._pin``'s ``materialise`` and ``store_once`` replaced by the
  identity;
* ``peeled sweeps``: ``physics._radial._peeled_sweeps`` (the radial sweeps run as
  straight code before the batched loop) dropped, so every sweep runs in the loop;
* ``broadcast products``: the dual simplex's ``broadcast_matvec`` / ``broadcast_vecmat``
  (matrix–vector products of small LPs as broadcast multiplies and sums) replaced by the
  same contractions as ``dot_general``s, at the physics precision;
* ``batch rule``: ``vmap`` of the unbatched rollout (``core._rollout._scan_rollout_unbatched``,
  plain batching: time-major, then transposed) in place of ``vmap(scan_rollout)`` with
  its batch-major ``custom_vmap`` rule.

Each of the first three is a named ``jax.jit`` in the library (inlined by XLA before it
optimises). Both sides of those rows are the traced program evaluated again equation by
equation (`without`): the "on" side replaces nothing, the "off" side puts the plain
expression in place of each named call, inside loops and branches too. So the two
programs differ only by the trick.

Workload per row (the seed rollout): one jitted function splits a key, resets N envs with
``batch_reset``, draws uniform random actions in [-1, 1] of shape ``(N, horizon,
*action_shape)`` and runs ``jax.vmap(scan_rollout)``; it returns every output. The env is
``powerzoojax.envs.make(id)``. Each row builds the workload twice in this process, trick
on and off, each traced from empty caches (``jax.clear_caches``) and compiled ahead of
time (``jit(...).lower(key).compile()``); ``first call s`` is lower + compile + the first
run of each (an ``eval_shape`` beforehand imports and traces everything once, so neither
build pays first imports).

Checks, at the first call's key, of every output leaf of the two programs: ``max abs
diff`` over the float leaves; ``agree``: "bitwise" when every leaf is identical, else
whether each float leaf is ``np.allclose`` (rtol 1e-4, atol 1e-4 x the leaf's largest
magnitude) and each integer or bool leaf equal, naming the leaves that are not (an
iteration count may differ where round-off moves a stopping test). ``HLO differs``: whether the optimised HLO of the two programs
differs (no: the trick changes nothing after XLA's passes).

Timing: ``--rounds`` rounds after one warm-up call each; a round calls both programs with
the same new key, in alternating order (on first in even rounds), each call timed to
``block_until_ready``. ``off side replaced``: the named calls the off side replaced
(as traced: a call inside a loop counts once). ``on / off`` is the median over rounds of the per-round ratio of
seconds (< 1: the trick pays); ``on ms`` / ``off ms`` the median seconds. Calls that
follow each other see nearly the same machine load; still, run it on a quiet machine.
Results: ``benchmarks/results/xla-tricks.md``.

    uv run python benchmarks/xla_tricks.py                     # every row, 15 rounds
    uv run python benchmarks/xla_tricks.py --rows pins --rounds 31
    uv run python benchmarks/xla_tricks.py --quick             # N = 8, 8 steps, 1 round: a smoke run

(At ``--quick``'s N = 8 the radial solve has no compaction stages, so nothing is peeled:
its peeled-sweeps rows compare two equal programs.)
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import jax.extend as jex
import jax.numpy as jnp
import numpy as np

from powerzoojax import envs
from powerzoojax.core import _precision as hp
from powerzoojax.core import _rollout
from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

HORIZON = 48
CHECK_RTOL = 1e-4

# A replacement of a named call: (the call's equation, its input values) -> its outputs.
Replacement = Callable[[jex.core.JaxprEqn, Sequence], list]


def _identity(eqn: jex.core.JaxprEqn, invals: Sequence) -> list:
    """The call's outputs are its first inputs, unchanged (`materialise`, `store_once`:
    the value; `_peeled_sweeps`: the carry it would have swept)."""
    outs = list(invals[: len(eqn.outvars)])
    for out, var in zip(outs, eqn.outvars):
        if tuple(jnp.shape(out)) != tuple(getattr(var.aval, "shape")):
            raise NotImplementedError(
                f"{eqn.params['name']}: an input of shape {jnp.shape(out)} for an output of {getattr(var.aval, 'shape')}"
            )
    return outs


def _as_dot_products(eqn: jex.core.JaxprEqn, invals: Sequence) -> list:
    """The call's body evaluated with each `reduce_sum` of a `mul` as one contraction
    (`einsum` at the physics precision: a `dot_general`), which is what `@` is. Works on the
    body as traced, so under any batching: the operands of the `mul` have the same rank,
    broadcasting on their size-1 axes."""
    closed = eqn.params["jaxpr"]
    env: dict = {}
    products: dict = {}

    def read(v):
        return v.val if isinstance(v, jex.core.Literal) else env[v]

    for var, const in zip(closed.jaxpr.constvars, closed.consts):
        env[var] = const
    for var, val in zip(closed.jaxpr.invars, invals):
        env[var] = val
    for inner in closed.jaxpr.eqns:
        ins = [read(v) for v in inner.invars]
        if inner.primitive.name == "mul":
            products[inner.outvars[0]] = ins
        if inner.primitive.name == "reduce_sum" and inner.invars[0] in products:
            a, b = products[inner.invars[0]]
            outs = [_contract(a, b, tuple(int(x) for x in inner.params["axes"]), inner.outvars[0].aval.shape)]
        else:
            subfuns, params = inner.primitive.get_bind_params(inner.params)
            outs = inner.primitive.bind(*subfuns, *ins, **params)
            outs = outs if inner.primitive.multiple_results else [outs]
        for var, val in zip(inner.outvars, outs):
            env[var] = val
    return [read(v) for v in closed.jaxpr.outvars]


def _contract(a, b, axes: tuple[int, ...], out_shape: tuple[int, ...]):
    """`sum(a * b, axes)` as one `einsum` (the axes of size 1 in an operand dropped)."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    rank = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (rank - a.ndim) + a.shape)
    b = b.reshape((1,) * (rank - b.ndim) + b.shape)
    letters = "abcdefghijklmnopqrstuvwxyz"[:rank]
    a_axes = [i for i in range(rank) if a.shape[i] != 1]
    b_axes = [i for i in range(rank) if b.shape[i] != 1]
    kept = [i for i in range(rank) if i not in axes and (i in a_axes or i in b_axes)]
    spec = (
        "".join(letters[i] for i in a_axes) + "," + "".join(letters[i] for i in b_axes)
        + "->" + "".join(letters[i] for i in kept)
    )
    squeezed_a = a.reshape(tuple(a.shape[i] for i in a_axes))
    squeezed_b = b.reshape(tuple(b.shape[i] for i in b_axes))
    return hp.einsum(spec, squeezed_a, squeezed_b).reshape(out_shape)


# trick -> {name of the library's jitted call: what the "off" side evaluates in its place}.
# The batch rule is not a named call: its "off" side is built by `make_collect(plain_vmap=True)`.
OFF_CALLS: dict[str, dict[str, Replacement]] = {
    "pins": {"materialise": _identity, "store_once": _identity},
    "peeled sweeps": {"_peeled_sweeps": _identity},
    "broadcast products": {"broadcast_matvec": _as_dot_products, "broadcast_vecmat": _as_dot_products},
    "batch rule": {},
}


def without(fn: Callable, replace: dict[str, Replacement]) -> Callable:
    """`fn` traced to a jaxpr and evaluated again with every call named in `replace` (a
    `jax.jit` of that name, at any depth: inside loops, branches and other calls) given by
    its replacement. With `replace` empty, the same computation as `fn`."""

    def run(*args):
        closed = jax.make_jaxpr(fn)(*args)
        return jax.tree.unflatten(jax.tree.structure(jax.eval_shape(fn, *args)), _eval(closed, replace, jax.tree.leaves(args)))

    return run


# Named calls replaced while tracing the last "off" side, by name (a row whose count is
# empty compares two equal programs).
REPLACED: dict[str, int] = {}


def _eval(closed, replace: dict[str, Replacement], args: Sequence) -> list:
    env: dict = {}

    def read(v):
        return v.val if isinstance(v, jex.core.Literal) else env[v]

    for var, const in zip(closed.jaxpr.constvars, closed.consts):
        env[var] = const
    for var, val in zip(closed.jaxpr.invars, args):
        env[var] = val
    for eqn in closed.jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if name in ("pjit", "jit") and str(eqn.params.get("name")) in replace:
            outs = replace[str(eqn.params["name"])](eqn, invals)
            REPLACED[str(eqn.params["name"])] = REPLACED.get(str(eqn.params["name"]), 0) + 1
        elif name in ("pjit", "jit", "closed_call"):  # inlined: XLA inlines them anyway
            outs = _eval(eqn.params["jaxpr" if "jaxpr" in eqn.params else "call_jaxpr"], replace, invals)
        elif name in ("custom_jvp_call", "custom_vjp_call"):  # forward only: the primal body
            body = eqn.params["call_jaxpr" if "call_jaxpr" in eqn.params else "fun_jaxpr"]
            outs = _eval(body, replace, invals)
        else:
            params = {k: _rewrite(v, replace) for k, v in eqn.params.items()}
            subfuns, bind_params = eqn.primitive.get_bind_params(params)
            outs = eqn.primitive.bind(*subfuns, *invals, **bind_params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        for var, val in zip(eqn.outvars, outs):
            env[var] = val
    return [read(v) for v in closed.jaxpr.outvars]


def _rewrite(param, replace: dict[str, Replacement]):
    """A loop's or branch's jaxpr traced again with the replacements made inside it (same
    signature). Traced again with none too, so that the "on" side takes the same path."""
    if type(param) is tuple and any(isinstance(p, (jex.core.ClosedJaxpr, jex.core.Jaxpr)) for p in param):
        return tuple(_rewrite(p, replace) for p in param)
    if isinstance(param, jex.core.ClosedJaxpr):
        return _retrace(param, replace)
    if isinstance(param, jex.core.Jaxpr):
        closed = _retrace(jex.core.ClosedJaxpr(param, ()), replace)
        if closed.consts:
            raise NotImplementedError("a rewritten open jaxpr captured constants")
        return closed.jaxpr
    return param


def _retrace(closed: jex.core.ClosedJaxpr, replace: dict[str, Replacement]) -> jex.core.ClosedJaxpr:
    avals = [getattr(v, "aval") for v in closed.jaxpr.invars]
    args = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    return jax.make_jaxpr(lambda *a: _eval(closed, replace, a))(*args)


@dataclass(frozen=True)
class Row:
    trick: str
    env_id: str
    n_envs: int
    why: str  # where the trick sits in this workload


ROWS: tuple[Row, ...] = (
    Row("pins", "DataCenterMicrogrid-v0", 256, "scheduler `store_once`, uniforms `materialise`"),
    Row("peeled sweeps", "DistGrid-case33bw-v0", 4096, "radial sweep loop"),
    Row("peeled sweeps", "dso-v0", 1024, "radial sweep loop"),
    Row("pins", "dso-v0", 1024, "post-reset resource states `materialise`"),
    Row("batch rule", "TransGrid-case5-dc-v0", 1024, "`vmap(scan_rollout)`"),
    Row("batch rule", "TransGrid-case5-dc-v0", 4096, "`vmap(scan_rollout)`"),
    Row("batch rule", "DistGrid-case33bw-v0", 4096, "`vmap(scan_rollout)`"),
    Row("broadcast products", "TransGrid-case5-dcopf-v0", 1024, "dispatch LP + dual simplex"),
    Row("broadcast products", "CostBasedMarket-case5-v0", 256, "offer SCED + dual simplex"),
)


def make_collect(env, params, n_envs: int, horizon: int, plain_vmap: bool = False):
    """A fresh (untraced) function of the seed rollout workload; each call a new closure.
    `plain_vmap`: batch the unbatched rollout by plain `vmap` instead of `scan_rollout`'s
    batch rule."""
    action_shape = tuple(env.action_space(params).shape)

    def collect(key):
        key, k_reset, k_actions, k_roll = jax.random.split(key, 4)
        obs0, states0 = batch_reset(env, jax.random.split(k_reset, n_envs), params)
        actions = jax.random.uniform(k_actions, (n_envs, horizon, *action_shape), minval=-1.0, maxval=1.0)

        def single_rollout(state, k, action_seq):
            if plain_vmap:
                return _rollout._scan_rollout_unbatched(env, False, k, state, params, action_seq)
            return scan_rollout(env, k, state, params, action_seq)

        return obs0, jax.vmap(single_rollout)(states0, jax.random.split(k_roll, n_envs), actions)

    return collect


def build(env, params, n_envs: int, horizon: int, trick: str, on: bool, key):
    """`(compiled, first outputs, first call s, optimised HLO text)` of one side."""
    jax.clear_caches()
    REPLACED.clear()
    t0 = time.perf_counter()
    if trick == "batch rule":
        fn = make_collect(env, params, n_envs, horizon, plain_vmap=not on)
    else:
        fn = without(make_collect(env, params, n_envs, horizon), {} if on else OFF_CALLS[trick])
    compiled = jax.jit(fn).lower(key).compile()
    out = jax.block_until_ready(compiled(key))
    first_s = time.perf_counter() - t0
    return compiled, out, first_s, program_text(compiled.as_text() or "")


def program_text(hlo: str) -> str:
    """Optimised HLO without source locations (the file, line and stack-frame tables and
    each op's `metadata`), which differ between two builds called from different lines,
    and without the numbers of instruction and computation names, which count every op
    traced before (`%add.365`, `%region_15` compare as `%add`, `%region`)."""
    lines, kept, in_tables = hlo.splitlines(), [], False
    for line in lines:
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            in_tables = True
        elif line.startswith(("%", "ENTRY")):
            in_tables = False
        if not in_tables:
            line = re.sub(r", metadata=\{[^}]*\}", "", line)
            kept.append(re.sub(r"_\d+\b", "", re.sub(r"([%\w\-]+)\.\d+\b", r"\1", line)))
    return "\n".join(kept)


def compare(a, b) -> tuple[float, bool, list[str], int]:
    """`(max |Δ| over float leaves, all leaves bitwise equal, paths of the leaves that do not
    agree, leaves compared)` of two output trees of one structure."""
    leaves_a = jax.tree_util.tree_leaves_with_path(a)
    leaves_b = jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b), (len(leaves_a), len(leaves_b))
    max_diff, bitwise, disagree = 0.0, True, []
    for (path, x), y in zip(leaves_a, leaves_b):
        x, y = np.asarray(x), np.asarray(y)
        name = jax.tree_util.keystr(path)
        if x.dtype != y.dtype or x.shape != y.shape:
            bitwise = False
            disagree.append(f"{name} ({x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)})")
            continue
        same = bool(np.array_equal(x, y, equal_nan=bool(np.issubdtype(x.dtype, np.floating))))
        bitwise &= same
        if same:
            continue
        if np.issubdtype(x.dtype, np.floating):
            finite = np.isfinite(x) & np.isfinite(y)
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
            max_diff = max(max_diff, float(np.max(np.where(finite, diff, 0.0))))
            scale = max(float(np.max(np.abs(np.where(finite, x, 0.0)), initial=0.0)), 1.0)
            close = np.array_equal(np.isfinite(x), np.isfinite(y)) and np.allclose(
                x, y, rtol=CHECK_RTOL, atol=CHECK_RTOL * scale, equal_nan=True
            )
            if not close:
                disagree.append(f"{name} (float, max |Δ| {float(np.max(np.where(finite, diff, 0.0))):.2g})")
        else:
            disagree.append(f"{name} ({x.dtype}, {int(np.sum(x != y))} of {x.size} differ)")
    return max_diff, bitwise, disagree, len(leaves_a)


def timed(compiled, key) -> float:
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(key))
    return time.perf_counter() - t0


def run_row(row: Row, n_envs: int, horizon: int, rounds: int) -> dict:
    env, params = envs.make(row.env_id)
    key = jax.block_until_ready(jax.random.PRNGKey(0))
    jax.eval_shape(make_collect(env, params, n_envs, horizon), key)  # imports, first traces
    on, out_on, first_on, hlo_on = build(env, params, n_envs, horizon, row.trick, True, key)
    off, out_off, first_off, hlo_off = build(env, params, n_envs, horizon, row.trick, False, key)
    replaced = ", ".join(f"{name} ×{count}" for name, count in sorted(REPLACED.items())) or "none"
    max_diff, bitwise, disagree, n_leaves = compare(out_on, out_off)
    del out_on, out_off
    jax.block_until_ready((on(jax.random.PRNGKey(1)), off(jax.random.PRNGKey(1))))  # warm-up
    t_on, t_off, ratios = [], [], []
    for r in range(rounds):
        k = jax.block_until_ready(jax.random.PRNGKey(2 + r))
        if r % 2 == 0:
            a = timed(on, k)
            b = timed(off, k)
        else:
            b = timed(off, k)
            a = timed(on, k)
        t_on.append(a)
        t_off.append(b)
        ratios.append(a / b)
    return {
        "row": row, "n_envs": n_envs, "on_ms": 1e3 * statistics.median(t_on), "off_ms": 1e3 * statistics.median(t_off),
        "ratio": statistics.median(ratios), "first_on": first_on, "first_off": first_off,
        "hlo_differs": hlo_on != hlo_off, "max_diff": max_diff, "disagree": disagree, "bitwise": bitwise, "n_leaves": n_leaves,
        "replaced": "plain `vmap`" if row.trick == "batch rule" else replaced,
    }


def markdown_row(res: dict) -> str:
    row = res["row"]
    if res["bitwise"]:
        agree = f"yes, bitwise ({res['n_leaves']} leaves)"
    elif not res["disagree"]:
        agree = f"yes ({res['n_leaves']} leaves)"
    else:
        shown = "; ".join(f"`{d}`" for d in res["disagree"][:3])
        more = f" and {len(res['disagree']) - 3} more" if len(res["disagree"]) > 3 else ""
        agree = f"NO: {shown}{more}"
    return (
        f"| {row.trick} | {row.env_id} ({row.why}) | {res['n_envs']} | {res['on_ms']:.1f} | {res['off_ms']:.1f} "
        f"| {res['ratio']:.3f} | {res['first_on']:.1f} / {res['first_off']:.1f} | {'yes' if res['hlo_differs'] else 'no'} "
        f"| {res['max_diff']:.2g} | {agree} | {res['replaced']} |"
    )


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def git_commit() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    commit = proc.stdout.strip() if proc.returncode == 0 else "unknown"
    return commit + (" (modified)" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", choices=sorted(OFF_CALLS), help="only these tricks (default: all)")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per row (default 15)")
    parser.add_argument("--horizon", type=int, default=HORIZON, help="steps per rollout (default 48)")
    parser.add_argument("--n-envs", type=int, default=None, help="N of every row (default: each row's own)")
    parser.add_argument("--quick", action="store_true", help="N = 8, 8 steps, 1 round: checks the script runs")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    horizon, rounds = (8, 1) if args.quick else (args.horizon, args.rounds)
    rows = [r for r in ROWS if args.rows is None or r.trick in args.rows]

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.lower().startswith("model name")), cpu)
    except OSError:
        pass
    print(f"# JAX {jax.__version__} ({jax.default_backend()}), {cpu}, {os.cpu_count()} CPUs; commit {git_commit()}")
    print(f"# horizon {horizon}, {rounds} rounds{' (--quick: not a measurement)' if args.quick else ''}; "
          f"load average before {loadavg()}", flush=True)
    print()
    print("| trick | workload | N | on ms | off ms | on / off | first call on / off s | HLO differs | max abs diff | agree "
          "| off side replaced |")
    print("|---|---|---:|---:|---:|---:|---|---|---:|---|---|")
    for row in rows:
        n_envs = 8 if args.quick else (args.n_envs or row.n_envs)
        print(markdown_row(run_row(row, n_envs, horizon, rounds)), flush=True)
    print()
    print(f"# load average after {loadavg()}")


if __name__ == "__main__":
    sys.exit(main())
