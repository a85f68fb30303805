"""Sensitivities of power-flow and market solutions, from the solvers' implicit derivatives.

Each function solves once and differentiates the solution in forward mode (one
Jacobian–vector product per input column, sharing one factorisation of the solver's
equations at the solution; see [`ac_power_flow`][powerzoojax.physics.ac_power_flow] and
[`dc_opf`][powerzoojax.physics.dc_opf]). They jit, `vmap` over operating points and run in
the dtype of the inputs (float64 inputs and network for float64 sensitivities).

- `ac_ptdf`: the AC analogue of the PTDF, `∂(line P at the from end)/∂(bus P injection)`
  at an AC operating point (voltage magnitudes, losses and reactive flows included), with
  the slack absorbing the injection as in the DC PTDF.
- `voltage_var_sensitivity`: `∂|V|/∂(bus Q injection)`, the voltage response to reactive
  power (the basis of volt/VAr control and of choosing where to place it).
- `lmp_load_sensitivity`: `∂LMP/∂(bus load)` of the DC-OPF with its active set fixed.

A solution that did not converge (or a DC-OPF that is not `OPTIMAL`) has zero
sensitivity; the returned result's flags say so.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from powerzoojax.physics._ac_pf import ACNetwork, ACPFResult, ac_power_flow
from powerzoojax.physics._dc_opf import DCOPFResult, DCOPFSetup, dc_opf


def _with_bus_injections(net: ACNetwork, load_p_mw, load_q_mvar):
    """`net` with one extra pseudo-load per bus, through which a bus injection enters
    (as a negative load), and the loads extended with zeros for them."""
    n = net.n_nodes
    bus_loads = jnp.concatenate([net.load_bus, jnp.arange(n, dtype=net.load_bus.dtype)])
    extended = eqx.tree_at(lambda k: k.load_bus, net, bus_loads)
    zeros = jnp.zeros((n,), jnp.result_type(load_p_mw, load_q_mvar))
    return extended, zeros


def ac_ptdf(
    net: ACNetwork,
    p_gen_mw: Float[Array, " n_units"],
    q_gen_mvar: Float[Array, " n_units"] | None,
    load_p_mw: Float[Array, " n_loads"],
    load_q_mvar: Float[Array, " n_loads"],
    v_set: Float[Array, " n_nodes"] | None = None,
    **solver_options,
) -> tuple[Float[Array, "n_lines n_nodes"], ACPFResult]:
    """AC power-transfer distribution factors at an operating point.

    The change of each line's active power at its from end per MW of active power
    injected at a bus and withdrawn at the slack, with voltages, angles, losses and the
    PV->PQ switches of the solution (held fixed) taken into account. At a flat, lossless
    operating point it equals the DC PTDF; away from it, it differs by the losses and the
    voltage-angle coupling the DC model drops.

    **Arguments:**

    - `net`: the network (`make_ac_network`).
    - `p_gen_mw`, `q_gen_mvar`, `load_p_mw`, `load_q_mvar`, `v_set`: the operating point, as for
      `ac_power_flow` ([MW], [MVAr], [p.u.]).
    - `**solver_options`: keyword options of `ac_power_flow` (`tol`, `method`, ...).

    **Returns:** `(sensitivity, result)`: `sensitivity` `(n_lines, n_nodes)` [MW/MW], the
    slack bus' column zero; `result` the `ACPFResult` of the operating point.
    """
    extended, zeros = _with_bus_injections(net, load_p_mw, load_q_mvar)
    load_q = jnp.concatenate([jnp.asarray(load_q_mvar), zeros])

    def solve(injection):
        load_p = jnp.concatenate([jnp.asarray(load_p_mw), -injection])
        return ac_power_flow(extended, p_gen_mw, q_gen_mvar, load_p, load_q, v_set, **solver_options)

    def flows(injection):
        res = solve(injection)
        return res.line_p_from_mw, res

    sensitivity, res = jax.jacfwd(flows, has_aux=True)(zeros)
    return sensitivity, res


def voltage_var_sensitivity(
    net: ACNetwork,
    p_gen_mw: Float[Array, " n_units"],
    q_gen_mvar: Float[Array, " n_units"] | None,
    load_p_mw: Float[Array, " n_loads"],
    load_q_mvar: Float[Array, " n_loads"],
    v_set: Float[Array, " n_nodes"] | None = None,
    **solver_options,
) -> tuple[Float[Array, "n_nodes n_nodes"], ACPFResult]:
    """Voltage-magnitude response to reactive power injections at an operating point.

    Entry `[i, k]` is the change of `|V_i|` per MVAr injected at bus `k`. Buses that
    regulate their voltage (PV buses not switched to a reactive limit, and the slack)
    have zero rows and columns: their generator absorbs the injection. A PV bus switched
    to a limit responds like a load bus.

    **Arguments:**

    - `net`: the network (`make_ac_network`).
    - `p_gen_mw`, `q_gen_mvar`, `load_p_mw`, `load_q_mvar`, `v_set`: the operating point, as for
      `ac_power_flow` ([MW], [MVAr], [p.u.]).
    - `**solver_options`: keyword options of `ac_power_flow`.

    **Returns:** `(sensitivity, result)`: `sensitivity` `(n_nodes, n_nodes)` [p.u./MVAr];
    `result` the `ACPFResult` of the operating point.
    """
    extended, zeros = _with_bus_injections(net, load_p_mw, load_q_mvar)
    load_p = jnp.concatenate([jnp.asarray(load_p_mw), zeros])

    def voltages(injection):
        load_q = jnp.concatenate([jnp.asarray(load_q_mvar), -injection])
        res = ac_power_flow(extended, p_gen_mw, q_gen_mvar, load_p, load_q, v_set, **solver_options)
        return res.vm, res

    sensitivity, res = jax.jacfwd(voltages, has_aux=True)(zeros)
    return sensitivity, res


def lmp_load_sensitivity(
    setup: DCOPFSetup,
    node_load_mw: Float[Array, " n_nodes"],
    **dc_opf_options,
) -> tuple[Float[Array, "n_nodes n_nodes"], DCOPFResult]:
    """Locational marginal prices' response to nodal loads, with the active set fixed.

    Entry `[i, k]` is the change of the LMP at bus `i` per MW of extra load at bus
    `k`: the curvature of the marginal costs of the units between their bounds, routed
    through the lines at their limits. With quadratic costs and no binding line every
    entry is `1 / Σ_free (1 / mc'_g)`; with linear costs the prices are locally
    constant (zero). At a degenerate optimum it is the one-sided derivative described in
    the guide (docs: Gradients).

    **Arguments:**

    - `setup`: the DC-OPF operators (`make_dc_opf_setup`).
    - `node_load_mw`: `(n_nodes,)` nodal loads [MW].
    - `**dc_opf_options`: keyword arguments of `dc_opf` (cost overrides, bounds, `tol`, ...).

    **Returns:** `(sensitivity, result)`: `sensitivity` `(n_nodes, n_nodes)` [$/MWh per
    MW]; `result` the `DCOPFResult` of the operating point.
    """

    def prices(load):
        res = dc_opf(setup, load, **dc_opf_options)
        return res.lmp, res

    sensitivity, res = jax.jacfwd(prices, has_aux=True)(jnp.asarray(node_load_mw))
    return sensitivity, res


__all__ = ["ac_ptdf", "lmp_load_sensitivity", "voltage_var_sensitivity"]
