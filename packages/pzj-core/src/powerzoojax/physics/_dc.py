"""DC power flow on a PTDF, with slack-bus balancing and the DC thermal check.

Everything that depends only on the network is folded into [`DCNetwork`][powerzoojax.physics.DCNetwork] on the
host, once. Per step the flow is `flows = p·(PTDF·A_units)ᵀ − load_flow` where
`load_flow = (PTDF·A_loads)·load` depends only on the load, so an env whose loads come
from a fixed profile tabulates it per profile row (see [`load_line_flows`][powerzoojax.physics.load_line_flows]) and pays a
(G × L) product per step instead of an (N × L) one. The operators are stored transposed
so that, batched under `vmap`, the product is a plain `(n_envs, G) @ (G, L)` GEMM.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from powerzoojax.core._types import FloatScalar, IntScalar
from powerzoojax.core import _precision as hp


class DCNetwork(eqx.Module):
    """Host-precomputed DC network operators (float32 leaves); build with
    [`make_dc_network`][powerzoojax.physics.make_dc_network].

    **Arguments:**

    - `ptdf_units_t`: `(n_units, n_lines)` transposed PTDF of the units' buses.
    - `ptdf_loads_t`: `(n_loads, n_lines)` transposed PTDF of the loads' buses.
    - `node_unit_slots`: `(n_nodes, max_units_per_node)` gather slots of the units at each
      node into `[p, 0]` (slot `n_units` means "no unit").
    - `loads_to_nodes`: `(n_nodes, n_loads)` 0/1 load-to-node map.
    - `slack_node`: `(n_nodes,)` one-hot slack node.
    - `slack_unit_weights`: `(n_units,)` share of the imbalance each unit takes (evenly
      among the slack bus's units).
    - `line_cap`, `line_floor`: `(n_lines,)` flow limits [MW].
    - `loads_are_nodes`: load `d` sits on node `d` for every `d`, so the load-to-node map
      is skipped (static).
    """

    ptdf_units_t: Float[Array, "n_units n_lines"]
    ptdf_loads_t: Float[Array, "n_loads n_lines"]
    # Units at each node as gather slots into [p, 0]: slot value n_units means "no unit".
    # A gather over at most a few slots per node replaces an (N × G) 0/1 product.
    node_unit_slots: Int[Array, "n_nodes max_units_per_node"]
    loads_to_nodes: Float[Array, "n_nodes n_loads"]
    slack_node: Float[Array, " n_nodes"]
    slack_unit_weights: Float[Array, " n_units"]
    line_cap: Float[Array, " n_lines"]
    line_floor: Float[Array, " n_lines"]
    # True when load d sits on node d for every d: the load→node map is then the
    # identity and is skipped rather than multiplied by.
    loads_are_nodes: bool = eqx.field(static=True)


def make_dc_network(case) -> DCNetwork:
    """Build the DC operators of a `CaseData` (host-side, float64 products cast to float32).

    **Arguments:**

    - `case`: the case.

    **Returns:**

    A [`DCNetwork`][powerzoojax.physics.DCNetwork].
    """
    ptdf = np.asarray(case.ptdf, np.float64)
    a_units = np.asarray(case.nodes_units_map, np.float64)
    a_loads = np.asarray(case.nodes_loads_map, np.float64)
    n_nodes = ptdf.shape[1]
    slack = int(case.slack_bus_idx)
    slack_node = np.zeros(n_nodes)
    slack_node[slack] = 1.0
    on_slack = a_units[slack].copy()
    weights = on_slack / on_slack.sum() if on_slack.sum() > 0 else on_slack
    load_idx = np.asarray(case.load_node_idx)
    loads_are_nodes = load_idx.shape[0] == n_nodes and bool(np.all(load_idx == np.arange(n_nodes)))
    unit_idx = np.asarray(case.unit_node_idx)
    n_units = unit_idx.shape[0]
    per_node = [np.flatnonzero(unit_idx == node) for node in range(n_nodes)]
    width = max(1, max((len(u) for u in per_node), default=1))
    slots = np.full((n_nodes, width), n_units, np.int32)
    for node, units in enumerate(per_node):
        slots[node, : len(units)] = units
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return DCNetwork(
        ptdf_units_t=f32((ptdf @ a_units).T),
        ptdf_loads_t=f32((ptdf @ a_loads).T),
        node_unit_slots=jnp.asarray(slots),
        loads_to_nodes=f32(a_loads),
        slack_node=f32(slack_node),
        slack_unit_weights=f32(weights),
        line_cap=f32(case.line_cap),
        line_floor=f32(case.line_floor),
        loads_are_nodes=loads_are_nodes,
    )


class DCFlow(eqx.Module):
    """Result of a DC power flow [MW].

    **Arguments:**

    - `unit_power_mw`: `(n_units,)` realised unit output, slack units included.
    - `line_flow_mw`: `(n_lines,)` flows, from → to positive.
    - `node_injection_mw`: `(n_nodes,)` net injections.
    """

    unit_power_mw: Float[Array, " n_units"]
    line_flow_mw: Float[Array, " n_lines"]
    node_injection_mw: Float[Array, " n_nodes"]


def proportional_dispatch(
    total_load_mw: FloatScalar, p_min: Float[Array, " n_units"], p_max: Float[Array, " n_units"]
) -> Float[Array, " n_units"]:
    """All units at `p_min`, the rest of the load shared in proportion to headroom.

    **Arguments:**

    - `total_load_mw`: total load [MW].
    - `p_min`, `p_max`: `(n_units,)` limits [MW].

    **Returns:**

    `(n_units,)` dispatch [MW], clipped to the limits.
    """
    headroom = p_max - p_min
    total_headroom = jnp.sum(headroom)
    remaining = jnp.clip(total_load_mw - jnp.sum(p_min), 0.0, total_headroom)
    share = jnp.where(total_headroom > 0, headroom / jnp.maximum(total_headroom, 1e-12), 0.0)
    return jnp.clip(p_min + remaining * share, p_min, p_max)


def load_line_flows(net: DCNetwork, load_mw: Float[Array, "*rows n_loads"]) -> Float[Array, "*rows n_lines"]:
    """Line flows [MW] caused by the loads alone (withdrawals), `(PTDF·A_loads)·load`.

    **Arguments:**

    - `net`: the [`DCNetwork`][powerzoojax.physics.DCNetwork].
    - `load_mw`: `(n_loads,)` loads, or a `(T, n_loads)` profile [MW].

    **Returns:**

    `(n_lines,)` or `(T, n_lines)` flows [MW].
    """
    return hp.matmul(load_mw, net.ptdf_loads_t)


def dc_power_flow(
    net: DCNetwork,
    dispatch_mw: Float[Array, " n_units"],
    load_mw: Float[Array, " n_loads"],
    load_flow_mw: Float[Array, " n_lines"] | None = None,
) -> DCFlow:
    """Slack-balanced DC power flow.

    The imbalance `Σload − Σp` is taken up by the units at the slack bus (split evenly
    there, not clamped to their limits); with no slack unit it is absorbed at the slack
    bus. Slack-bus columns of the PTDF are zero, so neither changes the flows.

    **Arguments:**

    - `net`: the [`DCNetwork`][powerzoojax.physics.DCNetwork].
    - `dispatch_mw`: `(n_units,)` unit set-points [MW].
    - `load_mw`: `(n_loads,)` loads [MW].
    - `load_flow_mw`: `(n_lines,)` `load_line_flows(net, load_mw)` when the caller has it
      tabulated; `None` computes it.

    **Returns:**

    A [`DCFlow`][powerzoojax.physics.DCFlow].
    """
    total_load = jnp.sum(load_mw)
    imbalance = total_load - jnp.sum(dispatch_mw)
    unit_power = dispatch_mw + imbalance * net.slack_unit_weights
    node_load = load_mw if net.loads_are_nodes else hp.matmul(net.loads_to_nodes, load_mw)
    residual = jnp.sum(unit_power) - total_load
    padded = jnp.concatenate([unit_power, jnp.zeros((1,), unit_power.dtype)])
    node_generation = jnp.sum(padded[net.node_unit_slots], axis=-1)
    node_injection = node_generation - node_load - residual * net.slack_node
    if load_flow_mw is None:
        load_flow_mw = load_line_flows(net, load_mw)
    line_flow = hp.matmul(unit_power, net.ptdf_units_t) - load_flow_mw
    return DCFlow(unit_power_mw=unit_power, line_flow_mw=line_flow, node_injection_mw=node_injection)


def dc_thermal_check(
    line_flow_mw: Float[Array, " n_lines"], line_cap: Float[Array, " n_lines"], line_floor: Float[Array, " n_lines"]
) -> tuple[FloatScalar, IntScalar]:
    """Total overload beyond `[floor, cap]` and the number of overloaded lines.

    **Arguments:**

    - `line_flow_mw`: `(n_lines,)` flows [MW].
    - `line_cap`, `line_floor`: `(n_lines,)` limits [MW].

    **Returns:**

    `(overload_mw, n_overloaded)`: float scalar [MW] and int scalar.
    """
    violation = jnp.maximum(line_flow_mw - line_cap, 0.0) + jnp.maximum(line_floor - line_flow_mw, 0.0)
    return jnp.sum(violation), jnp.sum((violation > 0).astype(jnp.int32))


def unit_limit_violation(
    unit_power_mw: Float[Array, " n_units"], p_min: Float[Array, " n_units"], p_max: Float[Array, " n_units"]
) -> FloatScalar:
    """Σ of realised output outside `[p_min, p_max]` [MW] (the slack units' overload).

    **Arguments:**

    - `unit_power_mw`: `(n_units,)` realised output [MW].
    - `p_min`, `p_max`: `(n_units,)` limits [MW].

    **Returns:**

    A float scalar [MW].
    """
    return jnp.sum(jnp.maximum(unit_power_mw - p_max, 0.0) + jnp.maximum(p_min - unit_power_mw, 0.0))
