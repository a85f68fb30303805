"""dc_opf of TransGrid-case1354pegase-dcopf-v0 (float32, as the env calls it) on load-profile
rows 0..N_ROWS-1 and on row 0 scaled by each LOAD_FACTOR with U(0.9, 1.1) noise per bus:
status, pivots, time of the first call and of a second, cost against HiGHS.
Usage: time_dcopf.py [N_ROWS] [LOAD_FACTOR ...]; OLD_SIMPLEX=FILE swaps in another copy of
_dual_simplex.py (e.g. `git show main:packages/pzj-core/src/powerzoojax/physics/_dual_simplex.py`)."""
import importlib.util
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from powerzoojax.envs import make
from powerzoojax.physics import _dispatch_lp, dc_opf
from scipy.optimize import linprog

if os.environ.get("OLD_SIMPLEX"):  # a copy of the solver module to compare against
    spec = importlib.util.spec_from_file_location("old_ds", os.environ["OLD_SIMPLEX"])
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    _dispatch_lp.bounded_dual_simplex = old.bounded_dual_simplex
env, params = make("TransGrid-case1354pegase-dcopf-v0")
setup, net = params.dcopf, params.network
prof = np.asarray(params.load_profiles)
print("profile rows", prof.shape, "rows 0-3 distinct:", len({prof[t].tobytes() for t in range(4)}))
f = jax.jit(lambda load: dc_opf(setup, load))
rng = np.random.default_rng(0)
cases = [(f"row {t}", prof[t]) for t in range(int(sys.argv[1]) if len(sys.argv) > 1 else 4)]
cases += [(f"{k:.0%} x U(0.9,1.1)", prof[0] * k * rng.uniform(0.9, 1.1, prof.shape[1])) for k in map(float, sys.argv[2:])]
for t, row in cases:
    lm = jnp.asarray(row, jnp.float32)
    node = lm if net.loads_are_nodes else net.loads_to_nodes @ lm
    t0 = time.time()
    r = jax.block_until_ready(f(node))
    t1 = time.time()
    r = jax.block_until_ready(f(node))
    t2 = time.time()
    # HiGHS on the same LP in float64 (units, lines as dc_opf poses them).
    mon = np.asarray(setup.mon_idx)
    a = np.asarray(setup.mon_ptdf_units_t, np.float64).T
    flow = np.asarray(node, np.float64) @ np.asarray(setup.mon_ptdf_t, np.float64)
    rlo, rhi = np.asarray(setup.line_floor, np.float64)[mon] + flow, np.asarray(setup.line_cap, np.float64)[mon] + flow
    c = np.asarray(setup.cost_c, np.float64)
    lo, hi = np.asarray(setup.p_min, np.float64), np.asarray(setup.p_max, np.float64)
    n, m = len(c), len(mon)
    pen = 1e3 * np.max(np.abs(c))
    res = linprog(np.concatenate([c, np.full(2 * m, pen)]),
                  A_ub=np.block([[a, -np.eye(m), np.zeros((m, m))], [-a, np.zeros((m, m)), -np.eye(m)]]),
                  b_ub=np.concatenate([rhi, -rlo]), A_eq=np.concatenate([np.ones(n), np.zeros(2 * m)])[None],
                  b_eq=[float(np.sum(np.asarray(node, np.float64)))], bounds=[(lo[i], hi[i]) for i in range(n)] + [(0, None)] * (2 * m), method="highs")
    ours = float(np.sum(c * np.asarray(r.p_mw, np.float64)))
    print(f"{t}: status={int(r.status)} pivots={int(r.n_iter)} first call {t1-t0:.1f}s, solve {t2-t1:.2f}s; "
          f"cost {ours:.4f} HiGHS {res.fun:.4f} (iters {res.nit}) rel {abs(ours-res.fun)/abs(res.fun):.2e}")
