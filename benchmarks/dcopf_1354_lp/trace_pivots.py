"""Solve case 1354pegase's DC-OPF LP (load row ROW, from extract_lp.py) with the dual simplex,
logging every pivot (objective, worst violation, basis hash: a repeat means cycling), and
with HiGHS. Usage: trace_pivots.py ROW float32|float64 [max_pivots]"""
import hashlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax as real_lax
from powerzoojax.physics import _dispatch_lp as dl
from powerzoojax.physics import _dual_simplex as ds

jax.config.update("jax_enable_x64", True)

row, dtname = int(sys.argv[1]), sys.argv[2]
maxp = int(sys.argv[3]) if len(sys.argv) > 3 else None
dt = getattr(jnp, dtname)
z = np.load("/tmp/lp1354_loads.npz")
node = z[f"row{row}"]
lp_store, log = {}, []

orig = dl.bounded_dual_simplex
def wrapped(a, b, c, lo, hi, basis, binv, at_upper, max_iter, **kw):
    lp_store["tr"] = (a, b, c, lo, hi)
    jax.debug.callback(lambda *v: lp_store.__setitem__("np", [np.asarray(x, np.float64) for x in v]), a, b, c, lo, hi)
    return orig(a, b, c, lo, hi, basis, binv, at_upper, max_iter, **kw)
dl.bounded_dual_simplex = wrapped

def cb(it, basis, at_upper, obj, viol, status):
    h = hashlib.sha1(np.asarray(basis).tobytes() + np.asarray(at_upper).tobytes()).hexdigest()[:12]
    log.append((int(it), h, float(obj), float(viol), int(status)))

class Shim:
    def __getattr__(self, k):
        return getattr(real_lax, k)
    def while_loop(self, cond, body, init):
        def body2(carry):
            out = body(carry)
            it, basis, binv, at_upper, status = out
            a, b, c, lo, hi = lp_store["tr"]
            n_vars = a.shape[1]
            isb = jnp.zeros((n_vars,), bool).at[basis].set(True)
            x_nb = jnp.where(isb, 0.0, jnp.where(at_upper, hi, lo))
            x_b = binv @ (b - a @ x_nb)
            x = x_nb.at[basis].add(x_b)
            viol = jnp.max(jnp.maximum(lo[basis] - x_b, x_b - hi[basis]))
            jax.debug.callback(cb, it, basis, at_upper, c @ x, viol, status)
            return out
        return real_lax.while_loop(cond, body2, init)
ds.lax = Shim()

lo, hi, c = (jnp.asarray(z[k], dt) for k in ("p_min", "p_max", "c"))
mon = z["mon_idx"]
flow = jnp.asarray(node, dt) @ jnp.asarray(z["mon_ptdf_t"], dt)
row_lo = jnp.asarray(z["floor"][mon], dt) + flow
row_hi = jnp.asarray(z["cap"][mon], dt) + flow
m_t = jnp.asarray(z["mon_m_t"], dt)
total = jnp.sum(jnp.asarray(node, dt))
budget = 4 * (len(mon) + 1) + lo.shape[0] if maxp is None else maxp
f = jax.jit(lambda *a: dl.solve_dispatch_lp(*a, penalty=1e3, max_pivots=budget)[0])
t0 = time.time()
sol = jax.block_until_ready(f(c, lo, hi, total, m_t, row_lo, row_hi))
t1 = time.time()
A, b, cc, l, h = lp_store["np"]
print(f"ours {dtname}: converged={bool(sol.converged)} pivots={int(sol.n_iter)} time(incl compile)={t1-t0:.1f}s cost={float(jnp.sum(c*sol.x)):.6f}")
# scaled objective of the final basis (last log line)
from scipy.optimize import linprog

t0 = time.time()
res = linprog(cc, A_eq=A, b_eq=b, bounds=np.stack([l, h], 1), method="highs-ds")
print(f"highs-ds: status={res.status} obj(scaled)={res.fun:.10g} iters={res.nit} {time.time()-t0:.1f}s")
res2 = linprog(cc, A_eq=A, b_eq=b, bounds=np.stack([l, h], 1), method="highs")
print(f"highs: status={res2.status} obj(scaled)={res2.fun:.10g} iters={res2.nit}")
n = lo.shape[0]
sc = max(np.max(np.abs(z["c"])), 1e-3)
sx = max(np.max(z["p_max"] - z["p_min"]), 1.0)
xh = z["p_min"] + res2.x[:n] * sx
print(f"highs unit cost={float(np.sum(z['c']*xh)):.6f}  violation MW={np.sum(res2.x[n+len(mon):])*sx:.4f}")
objs = np.array([r[2] for r in log])
hs = [r[1] for r in log]
print("log entries", len(log), "distinct bases", len(set(hs)))
seen = {}
for i, hh in enumerate(hs):
    if hh in seen:
        print(f"first repeated basis at log {i} (pivot {log[i][0]}), first seen {seen[hh]}")
        break
    seen[hh] = i
print("obj every 250:", [(log[i][0], round(objs[i], 7), round(log[i][3], 6)) for i in range(0, len(log), max(1, len(log)//25))])
dec = np.sum(np.diff(objs) < -1e-9)
stall = np.sum(np.abs(np.diff(objs)) <= 1e-12)
print(f"obj decreases (should be none in dual simplex): {dec}, flat steps: {stall} of {len(objs)-1}")
np.save(f"/tmp/lp1354_log_{row}_{dtname}.npy", np.array([(r[0], r[2], r[3], r[4]) for r in log]))
np.savez(f"/tmp/lp1354_lp_{row}.npz", A=A, b=b, c=cc, lo=l, hi=h)
