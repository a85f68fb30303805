"""DC power flow straight from a `CaseData` and nodal loads.

The env paths use [`powerzoojax.physics.dc_power_flow`][powerzoojax.physics.dc_power_flow] on a host-precomputed
[`DCNetwork`][powerzoojax.physics.DCNetwork] (per-load profiles, tabulated load flows). These two functions take
the case itself and a load per *node*, for scripts and analyses that have a case in hand
and no env: they are pure `jnp` on the case's arrays, so they also run under `jit` /
`vmap` with the case as an argument.
"""

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.physics._dc import dc_thermal_check
from powerzoojax.core import _precision as hp


def dc_power_flow_on_case(
    case: CaseData,
    unit_power_mw: Float[Array, " n_units"],
    node_load_mw: Float[Array, " n_nodes"],
) -> tuple[Float[Array, " n_lines"], Float[Array, " n_nodes"], Float[Array, " n_units"]]:
    """Slack-balanced DC power flow on a case.

    The imbalance `Σ node_load − Σ p` is taken up by the units at the slack bus, shared
    evenly and not clamped to their limits (so costs and limit checks must use the
    returned `actual_unit_power_mw`: slack energy is not free); with no unit at the slack
    bus the imbalance stays at the slack bus, whose PTDF column is zero. Injection =
    `A_units·p − load` with the residual `Σp − Σload` charged to the slack bus, and
    `line_flow = PTDF · injection` (from → to positive).

    **Arguments:**

    - `case`: the case.
    - `unit_power_mw`: `(n_units,)` dispatch [MW].
    - `node_load_mw`: `(n_nodes,)` load per node [MW].

    **Returns:**

    `(line_flow_mw (n_lines,), node_injection_mw (n_nodes,), actual_unit_power_mw (n_units,))`
    [MW].
    """
    p = jnp.asarray(unit_power_mw, jnp.float32)
    load = jnp.asarray(node_load_mw, jnp.float32)
    on_slack = case.nodes_units_map[case.slack_bus_idx]
    n_on_slack = jnp.sum(on_slack)
    weights = jnp.where(n_on_slack > 0, on_slack / jnp.maximum(n_on_slack, 1.0), 0.0)
    actual = p + (jnp.sum(load) - jnp.sum(p)) * weights
    residual = jnp.sum(actual) - jnp.sum(load)
    injection = hp.matmul(case.nodes_units_map, actual) - load
    injection = injection.at[case.slack_bus_idx].add(-residual)
    return hp.matmul(case.ptdf, injection), injection, actual


def dc_power_flow_on_case_with_check(
    case: CaseData,
    unit_power_mw: Float[Array, " n_units"],
    node_load_mw: Float[Array, " n_nodes"],
) -> tuple[
    Float[Array, " n_lines"],
    Float[Array, " n_nodes"],
    Float[Array, " n_units"],
    Bool[Array, ""],
    Int[Array, ""],
    Float[Array, ""],
]:
    """[`dc_power_flow_on_case`][powerzoojax.physics.dc_power_flow_on_case] followed by the DC
    thermal check.

    **Arguments:**

    - `case`: the case.
    - `unit_power_mw`: `(n_units,)` dispatch [MW].
    - `node_load_mw`: `(n_nodes,)` load per node [MW].

    **Returns:**

    `(line_flow_mw, node_injection_mw, actual_unit_power_mw, is_safe, n_violations,
    cost_thermal)`; `cost_thermal` is the MW beyond `[line_floor, line_cap]` summed over
    lines (DC active-power limits, not MVA).
    """
    flow, injection, actual = dc_power_flow_on_case(case, unit_power_mw, node_load_mw)
    overload, n_violations = dc_thermal_check(flow, case.line_cap, case.line_floor)
    return flow, injection, actual, n_violations == 0, n_violations, overload
