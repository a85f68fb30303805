"""Params of [`TransGridEnv`][powerzoojax.grid.transmission.TransGridEnv] and their host-side factory `make_trans_params`."""

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Shaped

from powerzoojax.case import CaseData
from powerzoojax.core import EnvParams
from powerzoojax.core._guard import check_profile_table, checked_profiles
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.grid.resources._bundle import ResourceBundle
from powerzoojax.grid.transmission._network_models import (
    ACOPFModel,
    ACPowerFlowModel,
    DCOPFModel,
    DCPowerFlowModel,
    NetworkModel,
)
from powerzoojax.physics import (
    ACNetwork,
    DCNetwork,
    ac_network_with_line_outages_of_case,
    LineOutagePTDF,
    line_outage_ptdf,
    line_outage_ptdf_of_lines,
    load_line_flows,
    make_dc_network,
)
from powerzoojax.physics._ac_opf import ACOPFSetup
from powerzoojax.physics._ac_pf import AC_PF_METHODS
from powerzoojax.physics._dc_opf import DCOPF_OBJECTIVES, UNLIMITED_MW, DCOPFSetup
from powerzoojax.physics._dispatch_lp import DispatchLPTuning
from powerzoojax.core import _precision as hp

# The keywords of make_trans_params that configure one built-in model (its of_case options).
_PF_OPTIONS = ("pf_max_iter", "pf_tol", "pf_method", "pf_warm_start", "pf_failure_cost")
_OPF_OPTIONS = ("opf_max_iter", "opf_tol", "opf_objective", "opf_warm_start", "opf_lp_tuning")
_ACOPF_OPTIONS = ("acopf_max_iter", "acopf_tol", "pf_failure_cost")
_MODEL_OPTIONS = tuple(dict.fromkeys(_PF_OPTIONS + _OPF_OPTIONS + _ACOPF_OPTIONS))


def _dc_opf_model(case: CaseData, flow: DCPowerFlowModel, o: dict[str, Any]) -> DCOPFModel:
    return DCOPFModel.of_case(
        case, power_flow=flow, max_iter=o["opf_max_iter"], tol=o["opf_tol"], objective=o["opf_objective"],
        warm_start=o["opf_warm_start"], lp_tuning=o["opf_lp_tuning"],
    )


def _ac_pf_model(case: CaseData, stage: DCPowerFlowModel | DCOPFModel, o: dict[str, Any]) -> ACPowerFlowModel:
    return ACPowerFlowModel.of_case(
        case, stage, max_iter=o["pf_max_iter"], tol=o["pf_tol"], method=o["pf_method"], warm_start=o["pf_warm_start"],
        failure_cost=o["pf_failure_cost"],
    )


def _ac_opf_model(case: CaseData, flow: DCPowerFlowModel, o: dict[str, Any]) -> ACOPFModel:
    return ACOPFModel.of_case(
        case, power_flow=flow, max_iter=o["acopf_max_iter"], tol=o["acopf_tol"], failure_cost=o["pf_failure_cost"]
    )


class _ModeAlias(NamedTuple):
    """What a `(physics, solver_mode)` pair stands for: its name, the keywords of
    `make_trans_params` its model reads, and how it builds that model from the case, the
    case's DC power flow and those keywords."""

    name: str
    options: tuple[str, ...]
    build: Callable[[CaseData, DCPowerFlowModel, dict[str, Any]], NetworkModel]


# The reference's integer codes, each an alias of the model it builds (the one table of modes).
_MODE_ALIASES: dict[tuple[int, int], _ModeAlias] = {
    (0, 0): _ModeAlias("DC power flow, agent dispatch", (), lambda case, flow, o: flow),
    (1, 0): _ModeAlias("AC power flow, agent dispatch", _PF_OPTIONS, lambda case, flow, o: _ac_pf_model(case, flow, o)),
    (0, 1): _ModeAlias("DC-OPF dispatch, DC power flow", _OPF_OPTIONS, _dc_opf_model),
    (1, 1): _ModeAlias(
        "DC-OPF dispatch, AC power flow", _PF_OPTIONS + _OPF_OPTIONS,
        lambda case, flow, o: _ac_pf_model(case, _dc_opf_model(case, flow, o), o),
    ),
    (0, 2): _ModeAlias("AC-OPF", _ACOPF_OPTIONS, _ac_opf_model),
    (1, 2): _ModeAlias("AC-OPF", _ACOPF_OPTIONS, _ac_opf_model),
}
MODE_NAMES = {codes: alias.name for codes, alias in _MODE_ALIASES.items()}


def _codes_of(model: NetworkModel) -> tuple[int | None, int] | None:
    """The `(physics, solver_mode)` aliases of a built-in model (`None` physics: any, as for
    the AC-OPF); `None` for a model of your own."""
    if isinstance(model, ACOPFModel):
        return None, 2
    if isinstance(model, ACPowerFlowModel):
        return 1, 1 if isinstance(model.dispatch_model, DCOPFModel) else 0
    if isinstance(model, DCOPFModel):
        return 0, 1
    if isinstance(model, DCPowerFlowModel):
        return 0, 0
    return None


class TransGridParams(EnvParams):
    """Params of [`TransGridEnv`][powerzoojax.grid.transmission.TransGridEnv]; build with
    [`make_trans_params`][powerzoojax.grid.transmission.make_trans_params].

    `network_model` is the mode's network model: it holds every array it reads (the DC
    network, the mode's setup: DC-OPF, AC network, AC-OPF; the AC models' reactive loads,
    voltage limits and ratings) and its solver options; `acpf` / `dcopf` / `acopf` read
    those setups back and `load_q_mvar`, `node_v_min`, `node_v_max`, `pf_failure_cost` the
    AC data (`None` where the mode has none: the AC-OPF result replaces any power flow, so
    mode 2 neither builds nor runs one).

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `network`: its [`DCNetwork`][powerzoojax.physics.DCNetwork].
    - `load_profiles`: `(T, n_loads)` loads [MW]; row `t mod T` is used at step `t`.
    - `load_line_flow_mw`: `(T, n_lines)` line flows caused by each profile row's loads
      [MW], derived from `load_profiles` (swap profiles with `with_load_profiles` so the two
      stay consistent).
    - `cost_thermal_weight`: weight of the `thermal_overload` cost channel.
    - `reward_scale`: multiplier of the reward.
    - `unit_limit_price`: price [$/MWh] of realised output outside a unit's
      `[p_min, p_max]` in the generation cost, or `None` for the reference cost model
      (see `make_trans_params`).
    - `inv_line_scale`, `inv_unit_scale`, `inv_total_capacity`: observation normalisers
      [1/MW].
    - `network_model`: the [`NetworkModel`][powerzoojax.grid.transmission.NetworkModel].
    - `line_out`: `(n_lines,)` outage mask applied with `with_line_outages` (all False as
      built).
    - `islanded`: the outages cut buses off the slack.
    - `node_islanded`: `(n_nodes,)` the buses cut off.
    - `islanding_cost`: flat cost charged on `power_balance` while islanded [MW].
    - `invalid_load_profiles`: set by `with_load_profiles` when non-finite values given
      inside `jit` were replaced by 0.
    - `resources`: tuple of [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle].
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `steps_per_day`: steps in one day (static).
    - `physics`, `solver_mode`: the reference's codes of the network model (static; those
      it was built from, or those of the model given; 0, 0 for a model of your own).
    - `include_unit_dispatch`: the action has one set-point per unit (static).
    """

    case: CaseData
    network: DCNetwork
    load_profiles: Float[Array, "n_profile_steps n_loads"]
    # Line flows caused by each profile row's loads, tabulated once: keeps the (N × L)
    # load product out of the step. Derived from load_profiles; swap profiles with
    # with_load_profiles so the two stay consistent.
    load_line_flow_mw: Float[Array, "n_profile_steps n_lines"]
    cost_thermal_weight: Float[Array, ""]
    reward_scale: Float[Array, ""]
    # Observation normalisers, inverted once on the host.
    inv_line_scale: Float[Array, " n_lines"]
    inv_unit_scale: Float[Array, " n_units"]
    inv_total_capacity: Float[Array, ""]
    network_model: NetworkModel
    # Line outages applied with with_line_outages (all False as built): the outage mask
    # over in-service lines, whether it cuts buses off the slack, which buses, and the
    # flat cost charged on power_balance while it does.
    line_out: Bool[Array, " n_lines"]
    islanded: Bool[Array, ""]
    node_islanded: Bool[Array, " n_nodes"]
    islanding_cost: Float[Array, ""]
    # Price of output outside the unit limits [$/MWh]; None keeps the reference's cost of
    # the realised output (see make_trans_params' unit_limit_price).
    unit_limit_price: Float[Array, ""] | None = None
    # Set by with_load_profiles: True when non-finite profile values given inside jit were
    # replaced by 0 (reported on every step as info["invalid_load_profiles"]).
    invalid_load_profiles: Bool[Array, ""] | None = eqx.field(default=None, kw_only=True)
    resources: tuple = eqx.field(default=(), kw_only=True)
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
    physics: int = eqx.field(static=True, default=0, kw_only=True)
    solver_mode: int = eqx.field(static=True, default=0, kw_only=True)
    include_unit_dispatch: bool = eqx.field(static=True, default=True, kw_only=True)

    @property
    def acpf(self) -> ACNetwork | None:
        """The AC network of an AC power-flow model (None in other modes)."""
        model = self.network_model
        return model.network if isinstance(model, ACPowerFlowModel) else None

    @property
    def dcopf(self) -> DCOPFSetup | None:
        """The DC-OPF setup of a DC-OPF dispatch (None in other modes)."""
        model = self.network_model
        if isinstance(model, ACPowerFlowModel):
            model = model.dispatch_model
        return model.setup if isinstance(model, DCOPFModel) else None

    @property
    def acopf(self) -> ACOPFSetup | None:
        """The AC-OPF setup (None in other modes)."""
        model = self.network_model
        return model.setup if isinstance(model, ACOPFModel) else None

    @property
    def load_q_mvar(self) -> Float[Array, " n_loads"] | None:
        """`(n_loads,)` reactive loads [MVAr] of a built-in AC model (None in other modes)."""
        model = self.network_model
        return model.ac.load_q_mvar if isinstance(model, (ACPowerFlowModel, ACOPFModel)) else None

    @property
    def node_v_min(self) -> Float[Array, " n_nodes"] | None:
        """`(n_nodes,)` lower voltage limits [p.u.] of a built-in AC model (None in other modes)."""
        model = self.network_model
        return model.ac.v_min if isinstance(model, (ACPowerFlowModel, ACOPFModel)) else None

    @property
    def node_v_max(self) -> Float[Array, " n_nodes"] | None:
        """`(n_nodes,)` upper voltage limits [p.u.] of a built-in AC model (None in other modes)."""
        model = self.network_model
        return model.ac.v_max if isinstance(model, (ACPowerFlowModel, ACOPFModel)) else None

    @property
    def pf_failure_cost(self) -> Float[Array, ""] | None:
        """Cost a built-in AC model charges on `power_balance` when its solve does not
        converge (None in other modes)."""
        model = self.network_model
        return model.ac.failure_cost if isinstance(model, (ACPowerFlowModel, ACOPFModel)) else None

    def with_load_profiles(self, load_profiles: ArrayLike) -> "TransGridParams":
        """These params with new load profiles (usable inside `jit`/`vmap`).

        **Arguments:**

        - `load_profiles`: `(T', n_loads)` loads [MW].

        **Returns:**

        New [`TransGridParams`][powerzoojax.grid.transmission.TransGridParams]. A wrong shape
        raises `ValueError`; non-finite values raise outside `jit` and are replaced by 0 inside
        it, flagged as `info["invalid_load_profiles"]` on every step.
        """
        profiles, invalid = checked_profiles(
            "TransGridParams.with_load_profiles", "load_profiles", load_profiles, self.load_profiles.shape[1]
        )
        return eqx.tree_at(
            lambda p: (p.load_profiles, p.load_line_flow_mw, p.invalid_load_profiles),
            self,
            (profiles, load_line_flows(self.network, profiles), invalid),
            is_leaf=lambda x: x is None,
        )

    def with_line_outages(self, line_out: Shaped[Array | np.ndarray, " n_lines"]) -> "TransGridParams":
        """These params with the lines where `line_out` is True out of service.

        Usable inside `jit` / `vmap` (`line_out` may be traced, so N−1 screening is one `vmap`
        over masks): the case's PTDF is corrected by line-outage distribution factors on the
        whole outage set ([`line_outage_ptdf`][powerzoojax.physics.line_outage_ptdf]), and every
        operator derived from it is rebuilt: the DC network's unit and load columns, the
        tabulated profile flows, the bundles' nodal PTDF and, in DC-OPF mode, the OPF's PTDF
        rows (the opened lines' limits are dropped). An opened line carries 0 MW.

        The mask replaces any earlier one (outages do not accumulate across calls); lines
        already out of service in the case stay out. An outage that cuts buses off the slack
        sets `islanded` (`info["islanded"]` on every step) and charges `islanding_cost` plus
        the load of the cut-off buses on `power_balance`; the flows are then those of the case
        with the opened lines' flows zeroed (finite, not physical). The DC power-flow and
        DC-OPF modes (and models of your own that read `params.network`) honour outages, and
        so do the AC power-flow modes: their AC network is rebuilt in the graph
        ([`ac_network_with_line_outages_of_case`][powerzoojax.physics.ac_network_with_line_outages_of_case]:
        `Ybus`, branch terms, fast-decoupled operators), so `vmap` over masks gives N-1
        scenarios for domain randomisation; the AC-OPF mode raises.

        **Arguments:**

        - `line_out`: `(n_lines,)` bool outage mask.

        **Returns:**

        New [`TransGridParams`][powerzoojax.grid.transmission.TransGridParams].

        Raises:
            ValueError: for a mask not of shape `(n_lines,)` or not boolean, or in the AC-OPF
                mode (rebuild the case with `case.with_line_status` and `make_trans_params`
                instead).
        """
        n_lines = self.case.n_lines
        if jnp.shape(line_out) != (n_lines,) or jnp.result_type(line_out) != jnp.bool_:
            raise ValueError(
                f"TransGridParams.with_line_outages: line_out must be a bool array of shape ({n_lines},) "
                f"(True = out), got shape {jnp.shape(line_out)} and dtype {jnp.result_type(line_out)}"
            )
        self._check_dc_mode("with_line_outages")
        params = self._with_outage(line_outage_ptdf(self.case, jnp.asarray(line_out)))
        if isinstance(self.network_model, ACPowerFlowModel):
            # The AC network with the lines opened in the graph (Ybus, branch terms and the
            # fast-decoupled operators); the earlier mask's lines are closed again first.
            opened = ac_network_with_line_outages_of_case(
                self.case, self.network_model.network, jnp.asarray(line_out), already_out=self.line_out
            )
            params = eqx.tree_at(lambda p: p.network_model.network, params, opened.network)
        return params

    def with_line_outages_at(self, lines: Shaped[Array | np.ndarray, "..."]) -> "TransGridParams":
        """[`with_line_outages`][powerzoojax.grid.transmission.TransGridParams.with_line_outages]
        for the lines at given indices.

        Same result; the in-graph solve is `(k × k)` instead of `(n_lines × n_lines)`, so N−1
        screening of a large case is
        `vmap(lambda k: params.with_line_outages_at(k[None]))(jnp.arange(n_lines))`.

        **Arguments:**

        - `lines`: `(k,)` 0-based line indices in `[-1, n_lines)`; `-1` pads, repeats count
          once (checked on the host for concrete input).

        **Returns:**

        New [`TransGridParams`][powerzoojax.grid.transmission.TransGridParams].

        Raises:
            ValueError: for `lines` not a 1-D integer array, concrete indices out of range, or
                an AC mode.
        """
        n_lines = self.case.n_lines
        if jnp.ndim(lines) != 1 or not jnp.issubdtype(jnp.result_type(lines), jnp.integer):
            raise ValueError(
                "TransGridParams.with_line_outages_at: lines must be a 1-D integer array of line indices, "
                f"got shape {jnp.shape(lines)} and dtype {jnp.result_type(lines)}"
            )
        if not isinstance(lines, jax.core.Tracer):
            bad = np.asarray(lines)[(np.asarray(lines) < -1) | (np.asarray(lines) >= n_lines)]
            if bad.size:
                raise ValueError(
                    f"TransGridParams.with_line_outages_at: line indices {bad.tolist()} outside [-1, {n_lines}) "
                    "(-1 = no line)"
                )
        if isinstance(self.network_model, ACPowerFlowModel):
            lines = jnp.asarray(lines)
            return self.with_line_outages(jnp.zeros((n_lines,), bool).at[jnp.clip(lines, 0, n_lines - 1)].max(lines >= 0))
        self._check_dc_mode("with_line_outages_at")
        return self._with_outage(line_outage_ptdf_of_lines(self.case, jnp.asarray(lines)))

    def _check_dc_mode(self, method: str) -> None:
        model = self.network_model
        if model.is_ac and not isinstance(model, ACPowerFlowModel):
            mode = f" (mode {MODE_NAMES[(self.physics, self.solver_mode)]!r})" if _codes_of(model) is not None else ""
            raise ValueError(
                f"TransGridParams.{method}: {type(model).__name__}{mode} "
                "does not support in-graph line outages; expected a DC or AC power-flow mode (solver_mode 0 or 1). Rebuild the case "
                "with case.with_line_status(...) and call make_trans_params for an AC study."
            )

    def _with_outage(self, outage: LineOutagePTDF) -> "TransGridParams":
        """These params with every PTDF-derived operator rebuilt from `outage`."""
        case, model = self.case, self.network_model
        ptdf_units_t = (hp.matmul(outage.ptdf, case.nodes_units_map)).T
        ptdf_loads_t = (hp.matmul(outage.ptdf, case.nodes_loads_map)).T
        network = eqx.tree_at(lambda n: (n.ptdf_units_t, n.ptdf_loads_t), self.network, (ptdf_units_t, ptdf_loads_t))
        ptdf_nodes_t = outage.ptdf.T

        def rebuilt(node: Any) -> Any:
            # Every DC power flow the model holds sees the outage (the bundles' nodal PTDF too).
            if not isinstance(node, DCPowerFlowModel):
                return node
            nodes_t = None if node.ptdf_nodes_t is None else ptdf_nodes_t
            return DCPowerFlowModel(network, node.nodes_units_map, nodes_t)

        model = jax.tree.map(rebuilt, model, is_leaf=lambda node: isinstance(node, DCPowerFlowModel))
        # The DC-OPF stage, alone or ahead of an AC power flow, drops the opened lines' limits.
        dcopf = model if isinstance(model, DCOPFModel) else getattr(model, "dispatch_model", None)
        if isinstance(dcopf, DCOPFModel):
            setup = dcopf.setup
            ptdf_t = outage.ptdf.T
            opened = outage.line_out
            dcopf = eqx.tree_at(
                lambda m: (
                    m.setup.ptdf_units_t, m.setup.ptdf_t, m.setup.mon_ptdf_units_t, m.setup.mon_ptdf_t,
                    m.setup.line_cap, m.setup.line_floor,
                ),
                dcopf,
                (
                    ptdf_units_t, ptdf_t, ptdf_units_t[:, setup.mon_idx], ptdf_t[:, setup.mon_idx],
                    jnp.where(opened, UNLIMITED_MW, setup.line_cap), jnp.where(opened, -UNLIMITED_MW, setup.line_floor),
                ),
            )
            model = dcopf if isinstance(model, DCOPFModel) else eqx.tree_at(lambda m: m.dispatch_model, model, dcopf)
        fields = lambda p: (  # noqa: E731
            p.network, p.load_line_flow_mw, p.network_model, p.line_out, p.islanded, p.node_islanded,
        )
        values = (
            network, hp.matmul(self.load_profiles, ptdf_loads_t), model, outage.line_out, outage.islanded, outage.node_islanded,
        )
        return eqx.tree_at(fields, self, values)

    def islanding_penalty(self, load_mw: Float[Array, " n_loads"]) -> Float[Array, ""]:
        """MW charged on `power_balance` for one step.

        **Arguments:**

        - `load_mw`: `(n_loads,)` the step's loads [MW].

        **Returns:**

        0 on a connected network, else `islanding_cost` plus the load [MW] on the buses cut
        off the slack.
        """
        load_cut = jnp.sum(jnp.where(self.node_islanded[self.case.load_node_idx], jnp.abs(load_mw), 0.0))
        return jnp.where(self.islanded, self.islanding_cost + load_cut, 0.0)


def _finite_scalar(name: str, value: Any, *, positive: bool = False, non_negative: bool = False) -> float:
    return finite_scalar("make_trans_params", name, value, positive=positive, non_negative=non_negative)


def _positive_int(name: str, value: Any) -> int:
    return positive_int("make_trans_params", name, value)


def make_trans_params(
    case: CaseData,
    load_profiles: ArrayLike | None = None,
    max_steps: int = 48,
    delta_t_hours: float | int = 0.5,
    steps_per_day: int = 48,
    cost_thermal_weight: float | int = 1.0,
    reward_scale: float | int = 0.01,
    physics: int | None = None,
    solver_mode: int | None = None,
    resources: tuple = (),
    include_unit_dispatch: bool = True,
    *,
    pf_max_iter: int = 30,
    pf_tol: float = 1e-5,
    pf_method: str = "fdlf",
    pf_warm_start: bool = False,
    opf_max_iter: int = 30,
    opf_tol: float = 1e-4,
    opf_objective: str = "linear",
    opf_warm_start: bool | None = None,
    opf_lp_tuning: DispatchLPTuning | None = None,
    pf_failure_cost: float | int = 100.0,
    islanding_cost: float | int = 100.0,
    acopf_max_iter: int = 50,
    acopf_tol: float = 1e-4,
    network_model: NetworkModel | None = None,
    unit_limit_price: float | int | None = None,
) -> TransGridParams:
    """Validate inputs on the host and build [`TransGridParams`][powerzoojax.grid.transmission.TransGridParams].

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `load_profiles`: `(T, n_loads)` loads [MW], row `t mod T` used at step `t`; `None`
      takes the case's nominal `(d_max + d_min) / 2` tiled over `max_steps` rows.
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `cost_thermal_weight`: weight of the `thermal_overload` cost channel.
    - `reward_scale`: multiplier of the reward.
    - `physics`: 0 (DC) or 1 (AC power flow); `None` (default): 0, or that of
      `network_model`.
    - `solver_mode`: 0 (agent dispatch), 1 (DC-OPF dispatch) or 2 (AC-OPF); `None`
      (default): 0, or that of `network_model`. The two codes are aliases of the built-in
      models (the table in [`NetworkModel`][powerzoojax.grid.transmission.NetworkModel]'s
      module): `(0, 0)` builds `DCPowerFlowModel.of_case(case)`, `(0, 1)`
      `DCOPFModel.of_case(case, ...)`, `(1, 0)` / `(1, 1)` an `ACPowerFlowModel` on either,
      `(0 or 1, 2)` `ACOPFModel.of_case(case, ...)`, with the `pf_*` / `opf_*` / `acopf_*`
      options below. Given with `network_model`, a code must agree with it (a
      `ValueError` names both); a model of your own takes none.
    - `resources`: tuple of [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle]
      built against the same case.
    - `include_unit_dispatch`: the action has one set-point per unit.
    The `pf_*`, `opf_*` and `acopf_*` options below configure the model the codes build;
    one set to other than its default raises `TypeError`, naming it, when that model does
    not read it (a DC mode given `pf_method`, or any of them with `network_model`, whose
    own factory takes its options).

    - `pf_max_iter`, `pf_tol`: AC power-flow iteration cap and tolerance [p.u.].
    - `pf_method`: `"fdlf"` (fast-decoupled, with a Newton re-solve of the instances it
      leaves unconverged), `"fdlf_only"` (no fallback: fastest, may miss stressed points)
      or `"newton"`.
    - `pf_warm_start`: start each step's AC power flow from the previous state's voltages
      and PV→PQ switches; off by default because with Q limits the result may then differ
      from the cold solve (see `ACPowerFlowModel.warm_start_from`).
    - `opf_max_iter`, `opf_tol`: DC-OPF iteration cap and tolerance.
    - `opf_objective`: what the DC-OPF dispatch minimises: `"linear"` `mc_c · p`, or
      `"polynomial"`, the case's full cost polynomial (see
      [`make_dc_opf_setup`][powerzoojax.physics.make_dc_opf_setup]); the reward's generation
      cost is the full polynomial either way.
    - `opf_warm_start`: start each step's DC-OPF from the previous step's optimal basis
      (linear objective with monitored lines, where a dual simplex solves it; see
      [`DCOPFModel`][powerzoojax.grid.transmission.DCOPFModel]). `None` (default): when
      the OPF monitors at least 16 lines. On fewer a cold start needs only a few pivots
      and the warm start's bookkeeping costs more than it saves (the A/B is in
      `benchmarks/results/opf.md`).
    - `opf_lp_tuning`: how that dual simplex runs, a
      [`DispatchLPTuning`][powerzoojax.physics.DispatchLPTuning] (static; the same optimum
      for every value). `None` (default): per device, chosen when the step is compiled.
    - `pf_failure_cost`: cost added to `power_balance` on a step whose AC power flow or
      AC-OPF does not converge.
    - `islanding_cost`: cost added to `power_balance` (with the load cut off) on every
      step of params whose line outages island buses.
    - `acopf_max_iter`, `acopf_tol`: AC-OPF iteration cap and tolerance (on PIPS' scaled
      KKT error; it runs in float32 like the env).
    - `network_model`: the network model, in place of the codes: a built-in one (e.g.
      `ACPowerFlowModel.of_case(case, DCOPFModel.of_case(case), method="newton")`) or one
      of your own; its `is_ac` decides the observation layout.
    - `unit_limit_price`: how the generation cost treats realised output outside a unit's
      `[p_min, p_max]` (the slack-bus units take up any imbalance of the agent's
      set-points, unclamped). `None` (default) is the reference's cost model: the cost
      polynomial of the realised output, wherever it lies, so a slack unit driven below
      zero earns a negative cost (its cubic term) and one driven past `p_max` pays only its
      own marginal cost: an agent trained on the reward alone learns to break the power
      balance. A price `π` [$/MWh] costs a unit at its output clipped into its limits plus
      `π` per MW outside them, so the reward never gains from leaving them; the MW stay
      reported on the `power_balance` channel either way. Pick `π` above every marginal
      cost of the case (the presets use 1,000 $/MWh).

    **Returns:**

    [`TransGridParams`][powerzoojax.grid.transmission.TransGridParams]. Raises `ValueError`
    naming a bad value, `TypeError` for an argument of the wrong type.
    """
    if not isinstance(case, CaseData):
        raise TypeError(
            f"make_trans_params: case must be a CaseData from powerzoojax.case.load_case, got {type(case).__name__}"
        )
    max_steps = _positive_int("max_steps", max_steps)
    steps_per_day = _positive_int("steps_per_day", steps_per_day)
    pf_max_iter = _positive_int("pf_max_iter", pf_max_iter)
    opf_max_iter = _positive_int("opf_max_iter", opf_max_iter)
    acopf_max_iter = _positive_int("acopf_max_iter", acopf_max_iter)
    delta_t_hours = _finite_scalar("delta_t_hours", delta_t_hours, positive=True)
    cost_thermal_weight = _finite_scalar("cost_thermal_weight", cost_thermal_weight, non_negative=True)
    reward_scale = _finite_scalar("reward_scale", reward_scale)
    pf_tol = _finite_scalar("pf_tol", pf_tol, positive=True)
    if pf_method not in AC_PF_METHODS:
        raise ValueError(f"make_trans_params: pf_method must be one of {AC_PF_METHODS}, got {pf_method!r}")
    if not isinstance(pf_warm_start, (bool, np.bool_)):
        raise TypeError(f"make_trans_params: pf_warm_start must be a bool, got {pf_warm_start!r}")
    opf_tol = _finite_scalar("opf_tol", opf_tol, positive=True)
    if opf_warm_start is not None and not isinstance(opf_warm_start, (bool, np.bool_)):
        raise TypeError(f"make_trans_params: opf_warm_start must be a bool or None, got {opf_warm_start!r}")
    if opf_objective not in DCOPF_OBJECTIVES:
        raise ValueError(f"make_trans_params: opf_objective must be one of {DCOPF_OBJECTIVES}, got {opf_objective!r}")
    acopf_tol = _finite_scalar("acopf_tol", acopf_tol, positive=True)
    pf_failure_cost = _finite_scalar("pf_failure_cost", pf_failure_cost, non_negative=True)
    islanding_cost = _finite_scalar("islanding_cost", islanding_cost, non_negative=True)
    if unit_limit_price is not None:
        unit_limit_price = _finite_scalar("unit_limit_price", unit_limit_price, non_negative=True)
    if physics is not None and (physics not in (0, 1) or isinstance(physics, bool)):
        raise ValueError(f"make_trans_params: physics must be 0 (DC) or 1 (AC), got {physics!r}")
    if solver_mode is not None and (solver_mode not in (0, 1, 2) or isinstance(solver_mode, bool)):
        raise ValueError(
            f"make_trans_params: solver_mode must be 0 (agent dispatch), 1 (DC-OPF) or 2 (AC-OPF), got {solver_mode!r}"
        )
    resources = tuple(resources)
    for k, bundle in enumerate(resources):
        if not isinstance(bundle, ResourceBundle):
            raise TypeError(f"make_trans_params: resources[{k}] must be a ResourceBundle, got {type(bundle).__name__}")
        bus = np.asarray(bundle.bus_idx)
        if bus.size and (int(bus.max()) >= case.n_nodes or int(bus.min()) < 0):
            raise ValueError(
                f"make_trans_params: resources[{k}] has bus index {int(bus.max())}, outside 0..{case.n_nodes - 1}"
            )
    if not isinstance(include_unit_dispatch, (bool, np.bool_)):
        raise TypeError(f"make_trans_params: include_unit_dispatch must be a bool, got {include_unit_dispatch!r}")
    if network_model is not None and not isinstance(network_model, NetworkModel):
        raise TypeError(
            "make_trans_params: network_model must be a NetworkModel (powerzoojax.grid.transmission), "
            f"got {type(network_model).__name__}"
        )

    n_loads = case.n_loads
    if load_profiles is None:
        nominal = 0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
        profiles = np.tile(nominal, (max_steps, 1))
    else:
        check_profile_table(
            "make_trans_params", "load_profiles", load_profiles, n_loads,
            columns="n_loads", column_word="load", dtype_word="numeric (real numbers)",
        )
        profiles = np.asarray(load_profiles)

    p_max = np.asarray(case.unit_p_max, np.float64)
    ptdf_loads = np.asarray(case.ptdf, np.float64) @ np.asarray(case.nodes_loads_map, np.float64)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    network = make_dc_network(case)
    options = dict(
        pf_max_iter=pf_max_iter, pf_tol=pf_tol, pf_method=pf_method, pf_warm_start=bool(pf_warm_start),
        pf_failure_cost=pf_failure_cost, opf_max_iter=opf_max_iter, opf_tol=opf_tol, opf_objective=opf_objective,
        opf_warm_start=None if opf_warm_start is None else bool(opf_warm_start), opf_lp_tuning=opf_lp_tuning,
        acopf_max_iter=acopf_max_iter, acopf_tol=acopf_tol,
    )
    if network_model is None:
        codes = (0 if physics is None else int(physics), 0 if solver_mode is None else int(solver_mode))
        alias = _MODE_ALIASES[codes]
        _check_options_read(options, alias.options, f"physics={codes[0]}, solver_mode={codes[1]} ({alias.name})")
        ptdf_nodes_t = f32(np.asarray(case.ptdf, np.float64).T) if resources else None
        network_model = alias.build(case, DCPowerFlowModel(network, case.nodes_units_map, ptdf_nodes_t), options)
    else:
        codes = _codes_agreeing(network_model, physics, solver_mode)
        _check_options_read(options, (), f"network_model={type(network_model).__name__} (its options are its own: set them on the model)")
    if resources and isinstance(network_model, ACPowerFlowModel) and not np.array_equal(np.asarray(case.load_node_idx), np.arange(case.n_nodes)):
        # The AC kernel takes per-load injections; bundles fold into loads only when there is
        # exactly one load per bus, in bus order (true of every shipped transmission case).
        raise NotImplementedError(
            "make_trans_params: resource bundles with the AC power flow (physics=1) need one load per bus in bus order; "
            f"this case has {case.n_loads} loads on {case.n_nodes} buses"
        )
    return TransGridParams(
        case=case,
        network=network,
        load_profiles=f32(profiles),
        load_line_flow_mw=f32(np.asarray(profiles, np.float64) @ ptdf_loads.T),
        cost_thermal_weight=f32(cost_thermal_weight),
        reward_scale=f32(reward_scale),
        inv_line_scale=f32(1.0 / np.maximum(np.abs(np.asarray(case.line_cap, np.float64)), 1.0)),
        inv_unit_scale=f32(1.0 / np.maximum(p_max, 1.0)),
        inv_total_capacity=f32(1.0 / max(float(p_max.sum()), 1.0)),
        network_model=network_model,
        line_out=jnp.zeros((case.n_lines,), bool),
        islanded=jnp.asarray(False),
        node_islanded=jnp.zeros((case.n_nodes,), bool),
        islanding_cost=f32(islanding_cost),
        unit_limit_price=None if unit_limit_price is None else f32(unit_limit_price),
        resources=resources,
        max_steps=max_steps,
        delta_t_hours=delta_t_hours,
        steps_per_day=steps_per_day,
        physics=codes[0],
        solver_mode=codes[1],
        include_unit_dispatch=bool(include_unit_dispatch),
    )


_OPTION_DEFAULTS = {
    name: parameter.default for name, parameter in inspect.signature(make_trans_params).parameters.items() if name in _MODEL_OPTIONS
}


def _check_options_read(options: dict[str, Any], read: tuple[str, ...], chosen: str) -> None:
    """Raise `TypeError` naming the model options set to other than their default that the
    chosen model does not read (no option is accepted and then ignored)."""

    def is_default(name: str, value: Any) -> bool:
        default = _OPTION_DEFAULTS[name]
        return value is None if default is None else (value is not None and bool(value == default))

    stray = [f"{name}={value!r}" for name, value in options.items() if name not in read and not is_default(name, value)]
    if stray:
        one = len(stray) == 1
        raise TypeError(
            f"make_trans_params: {', '.join(stray)} configure{'s' if one else ''} a model that {chosen} does not run; "
            f"leave {'it' if one else 'them'} at the default or pick a mode that reads {'it' if one else 'them'}"
        )


def _codes_agreeing(model: NetworkModel, physics: int | None, solver_mode: int | None) -> tuple[int, int]:
    """The codes of a given `network_model`, after checking that those given with it agree."""
    own = _codes_of(model)
    name = type(model).__name__
    pairs = (("physics", physics, None if own is None else own[0]), ("solver_mode", solver_mode, None if own is None else own[1]))
    for keyword, given, its in pairs:
        if given is None:
            continue
        if own is None:
            raise ValueError(
                f"make_trans_params: {keyword}={given} picks a built-in model, but network_model={name} is a model of your "
                "own; pass one or the other"
            )
        if its is not None and given != its:
            raise ValueError(
                f"make_trans_params: {keyword}={given} conflicts with network_model={name} "
                f"({MODE_NAMES[(own[0] or 0, own[1])]}, {keyword}={its}); pass one or the other, or codes that agree"
            )
    if own is None:
        return 0, 0
    return (own[0] if own[0] is not None else int(physics or 0)), own[1]
