"""Dump the DC-OPF inputs of TransGrid-case1354pegase-dcopf-v0 (load-profile rows 0-3,
monitored PTDF, limits, unit bounds and costs) to /tmp/lp1354_loads.npz for trace_pivots.py."""
import jax
import numpy as np
from powerzoojax.envs import make

jax.config.update("jax_enable_x64", True)
env, params = make("TransGrid-case1354pegase-dcopf-v0")
setup = params.dcopf
net = params.network
print(type(net).__name__, setup.mon_idx.shape, setup.p_min.shape)
rows = {}
for t in range(4):
    lm = np.asarray(params.load_profiles[t], np.float64)
    node = lm if net.loads_are_nodes else np.asarray(net.loads_to_nodes, np.float64) @ lm
    rows[t] = node
np.savez("/tmp/lp1354_loads.npz", **{f"row{t}": v for t, v in rows.items()},
         mon_ptdf_t=np.asarray(setup.mon_ptdf_t), mon_m_t=np.asarray(setup.mon_ptdf_units_t),
         cap=np.asarray(setup.line_cap), floor=np.asarray(setup.line_floor), mon_idx=np.asarray(setup.mon_idx),
         p_min=np.asarray(setup.p_min), p_max=np.asarray(setup.p_max), c=np.asarray(setup.cost_c))
