"""Microgrid params from real profiles, and the out-of-distribution transforms of the DCMG
task. Host-side: call these before `jit`.
"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp

from powerzoojax.data import DC_STEPS_PER_DAY, DataLoader, load_dc_profiles, load_workload_profile
from powerzoojax.grid.microgrid._dc_microgrid import DCMicrogridParams, make_dcmicrogrid_params

OOD_SCENARIOS = ("workload_swap", "workload_shock", "renewable_drought", "cooling_stress", "dg_derating", "sla_tighten")
RENEWABLE_DROUGHT_FACTOR = 0.2
COOLING_STRESS_DELTA_C = 5.0
DG_DERATING_FACTOR = 0.6
SLA_TIGHT_SLACK = 1.2
# workload_swap and workload_shock: the inference share taken from another trace.
_WORKLOAD_OOD_SOURCE = {"workload_swap": "azure", "workload_shock": "alibaba"}


def make_dcmicrogrid_params_with_profiles(
    source: str = "google",
    episode_start_step: int = 0,
    *,
    require_real_data: bool = False,
    loader: DataLoader | None = None,
    return_sources: bool = False,
    **kwargs: Any,
) -> DCMicrogridParams | tuple[DCMicrogridParams, dict[str, str]]:
    """Microgrid params whose CPU, PV, price and temperature profiles are one episode of the
    `source` workload trace (see [`load_dc_profiles`][powerzoojax.data.load_dc_profiles]).

    **Arguments:**

    - `source`: workload trace (`"google"`, `"azure"`, `"alibaba"`).
    - `episode_start_step`: first 5-minute step of the episode in the trace.
    - `require_real_data`: raise instead of falling back to synthetic profiles.
    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.
    - `return_sources`: also return where each profile came from.
    - `**kwargs`: passed to [`make_dcmicrogrid_params`][powerzoojax.grid.microgrid.make_dcmicrogrid_params]
      (`max_steps` rows, default 288).

    **Returns:**

    [`DCMicrogridParams`][powerzoojax.grid.microgrid.DCMicrogridParams], or
    `(params, sources)` with `return_sources`, `sources` naming each profile's origin
    (`"measured:…"`, `"benchmark:…"`, `"synthetic:…"`).
    """
    n_steps = kwargs.get("max_steps", DC_STEPS_PER_DAY)
    profiles = load_dc_profiles(
        source, episode_start_step=episode_start_step, n_steps=n_steps,
        require_real_data=require_real_data, loader=loader,
    )
    params = make_dcmicrogrid_params(
        cpu_profile=profiles.cpu_profile,
        pv_cf_profile=profiles.pv_cf_profile,
        price_profile=profiles.price_profile,
        outdoor_temp_profile=profiles.outdoor_temp_profile,
        **kwargs,
    )
    return (params, profiles.sources) if return_sources else params


def apply_ood_transform(
    params: DCMicrogridParams,
    scenario: str,
    *,
    episode_start_step: int = 0,
    require_real_data: bool = True,
    loader: DataLoader | None = None,
    drought_factor: float = RENEWABLE_DROUGHT_FACTOR,
    temp_delta: float = COOLING_STRESS_DELTA_C,
    dg_derating_factor: float = DG_DERATING_FACTOR,
    sla_slack: float = SLA_TIGHT_SLACK,
) -> DCMicrogridParams:
    """`params` under one OOD scenario, every other leaf unchanged.

    `renewable_drought`: PV CF × `drought_factor`; `cooling_stress`: outdoor temperature +
    `temp_delta`; `dg_derating`: diesel capacity × `dg_derating_factor`; `sla_tighten`:
    both deadline slacks = `sla_slack`; `workload_swap` / `workload_shock`: the inference
    profile replaced by the Azure / Alibaba trace from `episode_start_step` (same length).

    **Arguments:**

    - `params`: the microgrid params.
    - `scenario`: one of the scenarios above.
    - `episode_start_step`: first step of the replacement trace.
    - `require_real_data`: raise when a trace is missing instead of using the synthetic
      profile.
    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.
    - `drought_factor`: PV multiplier (0.2).
    - `temp_delta`: temperature shift [°C] (5).
    - `dg_derating_factor`: diesel capacity multiplier (0.6).
    - `sla_slack`: deadline slack (1.2).

    **Returns:**

    New [`DCMicrogridParams`][powerzoojax.grid.microgrid.DCMicrogridParams].
    """
    if scenario not in OOD_SCENARIOS:
        raise ValueError(f"unknown OOD scenario {scenario!r}; expected one of {OOD_SCENARIOS}")
    if scenario == "renewable_drought":
        return eqx.tree_at(lambda p: p.pv_cf_profile, params, params.pv_cf_profile * float(drought_factor))
    if scenario == "cooling_stress":
        return eqx.tree_at(
            lambda p: p.dc.outdoor_temp_profile, params, params.dc.outdoor_temp_profile + float(temp_delta)
        )
    if scenario == "dg_derating":
        return eqx.tree_at(lambda p: p.dg_p_max_mw, params, params.dg_p_max_mw * float(dg_derating_factor))
    if scenario == "sla_tighten":
        return eqx.tree_at(
            lambda p: p.dc.deadline_slack, params, jnp.full_like(params.dc.deadline_slack, float(sla_slack))
        )
    workload = load_workload_profile(
        _WORKLOAD_OOD_SOURCE[scenario], require_real_data=require_real_data, loader=loader
    )
    n = params.dc.infer_fraction_profile.shape[0]
    rows = (int(episode_start_step) + jnp.arange(n)) % workload.cpu_util.shape[0]
    cpu = jnp.asarray(workload.cpu_util, jnp.float32)[rows]
    return eqx.tree_at(lambda p: p.dc.infer_fraction_profile, params, cpu)
