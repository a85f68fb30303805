"""Params factories of the DSO task's reference API: the flexible loads and the env params
from explicit arguments, from a data split, with one flexible load, or on a
non-stationary schedule.
"""

from typing import Any

import jax
import jax.numpy as jnp

from powerzoojax.case import CaseData, load_case
from powerzoojax.grid.distribution import DistGridParams, make_dist_params
from powerzoojax.grid.resources import FlexLoadBundle, make_flexload_bundle
from powerzoojax.grid.tasks.dso._constants import DSO_FLEXLOAD_CONFIG, DSO_V_MAX, DSO_V_MIN
from powerzoojax.grid.tasks.dso._profiles import (
    _feeder_array,
    load_dso_feeder_shapes,
    make_dso_load_profiles,
    make_synthetic_feeder_shapes,
)


_COST_MODES = ("voltage_only", "aggregate")


def _dso_case(case: CaseData | None) -> CaseData:
    return load_case("33bw") if case is None else case


def resolve_dso_flexload_config(
    *, flexload_config: list[dict] | None = None, flexload_bus_ids: list[int] | None = None
) -> list[dict]:
    """The flexible-load layout.

    **Arguments:**

    - `flexload_config`: full per-device dicts; used as given when not `None`.
    - `flexload_bus_ids`: buses replacing those of `DSO_FLEXLOAD_CONFIG` (same count).

    **Returns:**

    A list of per-device dicts.
    """
    if flexload_config is not None:
        config = [dict(c) for c in flexload_config]
        for c in config:
            missing = {"bus_id", "curtail_cap_mw", "shift_cap_mw"} - set(c)
            if missing:
                raise ValueError(f"flexload_config entry {c} lacks {sorted(missing)}")
        return config
    config = [dict(c) for c in DSO_FLEXLOAD_CONFIG]
    if flexload_bus_ids is not None:
        if len(flexload_bus_ids) != len(config):
            raise ValueError(f"flexload_bus_ids must name {len(config)} buses, got {list(flexload_bus_ids)}")
        for c, bus in zip(config, flexload_bus_ids):
            c["bus_id"] = int(bus)
    return config


def make_dso_flexload_bundle(
    case: CaseData,
    *,
    shift_horizon: int = 4,
    curtail_cost_per_mwh: float = 50.0,
    shift_cost_per_mwh: float = 10.0,
    dt_hours: float = 0.5,
    flexload_config: list[dict] | None = None,
) -> FlexLoadBundle:
    """The DSO's flexible loads on `case` (bus numbers resolved through `case.node_ids`).

    **Arguments:**

    - `case`: the feeder.
    - `shift_horizon`: steps a shifted load is spread over.
    - `curtail_cost_per_mwh`, `shift_cost_per_mwh`: costs of curtailed and shifted
      energy [$/MWh].
    - `dt_hours`: step length [hours].
    - `flexload_config`: per-device dicts; `None` takes `DSO_FLEXLOAD_CONFIG` (six devices,
      action 12, obs 30).

    **Returns:**

    A [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle].
    """
    config = resolve_dso_flexload_config(flexload_config=flexload_config)
    return make_flexload_bundle(
        case, [c["bus_id"] for c in config], cap_curtail_mw=[c["curtail_cap_mw"] for c in config],
        cap_shift_mw=[c["shift_cap_mw"] for c in config], horizon=shift_horizon,
        curtail_cost=curtail_cost_per_mwh, holding_cost=shift_cost_per_mwh, dt_hours=dt_hours,
    )


def make_dso_params(
    case: CaseData | None = None,
    *,
    feeder_shapes: dict[str, Any] | None = None,
    max_steps: int = 48,
    steps_per_day: int = 48,
    episode_start: int = 0,
    load_scale: float = 1.0,
    v_slack: float = 1.0,
    v_min: float = DSO_V_MIN,
    v_max: float = DSO_V_MAX,
    loss_penalty_weight: float = 0.1,
    shift_horizon: int = 4,
    curtail_cost_per_mwh: float = 50.0,
    shift_cost_per_mwh: float = 10.0,
    dt_hours: float = 0.5,
    flexload_config: list[dict] | None = None,
    flexload_bus_ids: list[int] | None = None,
    bus_load_scale_overrides: dict | None = None,
    preserve_feeder_totals: bool = False,
    cost_mode: str = "voltage_only",
) -> DistGridParams:
    """DSO env params in one call.

    `case` with the flexible loads of `flexload_config` / `flexload_bus_ids`, no per-bus
    DER actions, band `[v_min, v_max]`, and load profiles from `feeder_shapes`.

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `feeder_shapes`: see [`make_dso_load_profiles`][powerzoojax.grid.tasks.dso.make_dso_load_profiles];
      `None` takes the synthetic shapes (for development, not the benchmark).
    - `max_steps`: episode length [steps].
    - `steps_per_day`: steps in one day.
    - `episode_start`: first row of the shapes.
    - `load_scale`: multiplier of the static loads.
    - `v_slack`: substation voltage [p.u.].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the network losses in the reward.
    - `shift_horizon`, `curtail_cost_per_mwh`, `shift_cost_per_mwh`, `dt_hours`: as for
      `make_dso_flexload_bundle`.
    - `flexload_config`: per-device dicts; `None` takes `DSO_FLEXLOAD_CONFIG`.
    - `flexload_bus_ids`: buses replacing those of `DSO_FLEXLOAD_CONFIG` (same count).
    - `bus_load_scale_overrides`, `preserve_feeder_totals`: as for `dso_base_loads`.
    - `cost_mode`: accepted for old configs; no effect.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    if cost_mode not in _COST_MODES:
        raise ValueError(f"unknown cost_mode {cost_mode!r}; valid (inert): {_COST_MODES}")
    case = _dso_case(case)
    shapes = make_synthetic_feeder_shapes(max_steps, steps_per_day=steps_per_day) if feeder_shapes is None else feeder_shapes
    p, q = make_dso_load_profiles(
        case, shapes, max_steps=max_steps, episode_start=episode_start, load_scale=load_scale,
        bus_load_scale_overrides=bus_load_scale_overrides, preserve_feeder_totals=preserve_feeder_totals,
    )
    config = resolve_dso_flexload_config(flexload_config=flexload_config, flexload_bus_ids=flexload_bus_ids)
    bundle = make_dso_flexload_bundle(
        case, shift_horizon=shift_horizon, curtail_cost_per_mwh=curtail_cost_per_mwh,
        shift_cost_per_mwh=shift_cost_per_mwh, dt_hours=dt_hours, flexload_config=config,
    )
    return make_dist_params(
        case, max_steps=max_steps, steps_per_day=steps_per_day, v_slack=v_slack, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, resources=(bundle,), include_der=False,
        p_load_profiles=p, q_load_profiles=q, delta_t_hours=dt_hours,
    )


def make_dso_params_from_split(
    case: CaseData | None = None, *, role: str = "train", data_loader: Any = None, resample: str = "30min", **kwargs: Any
) -> DistGridParams:
    """[`make_dso_params`][powerzoojax.grid.tasks.dso.make_dso_params] on the feeder shapes of a
    split role.

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `role`: split role.
    - `data_loader`: see [`load_dso_feeder_shapes`][powerzoojax.grid.tasks.dso.load_dso_feeder_shapes]
      (Ausgrid when available, else the shipped substitute).
    - `resample`: step of the shapes.
    - `**kwargs`: further keywords of `make_dso_params`.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    shapes = load_dso_feeder_shapes(data_loader, role, resample=resample)
    return make_dso_params(case, feeder_shapes=shapes, **kwargs)


def make_dso_1flex_params(
    case: CaseData | None = None, *, bus_id: int = 18, curtail_cap_mw: float = 0.1, shift_cap_mw: float = 0.1, **kwargs: Any
) -> DistGridParams:
    """[`make_dso_params`][powerzoojax.grid.tasks.dso.make_dso_params] with one flexible load
    (action 2).

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `bus_id`: bus number of the flexible load.
    - `curtail_cap_mw`, `shift_cap_mw`: its capacities [MW].
    - `**kwargs`: further keywords of `make_dso_params`.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    config = [{"bus_id": int(bus_id), "curtail_cap_mw": float(curtail_cap_mw), "shift_cap_mw": float(shift_cap_mw)}]
    return make_dso_params(case, flexload_config=config, **kwargs)


def make_dso_params_nonstationary(
    case: CaseData | None = None,
    *,
    feeder_shapes: dict[str, Any] | None = None,
    episode_idx: int = 0,
    total_episodes: int = 500,
    key: Any = None,
    drift_rate: float = 3e-4,
    rolling_sigma_steps: float = 720.0,
    mode: str = "train",
    max_steps: int = 48,
    **kwargs: Any,
) -> DistGridParams:
    """[`make_dso_params`][powerzoojax.grid.tasks.dso.make_dso_params] for one episode of a
    non-stationary schedule ([`NonstationarySampler`][powerzoojax.data.NonstationarySampler]):
    its window start and load drift (P and Q × `drift_factor`).

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `feeder_shapes`: shapes spanning the whole training window; `None` takes synthetic
      shapes of `max(2·total_episodes, 10·max_steps)` steps.
    - `episode_idx`: index of the episode.
    - `total_episodes`, `drift_rate`, `rolling_sigma_steps`: as for the sampler.
    - `key`: PRNG key of the draw; `None` takes `PRNGKey(episode_idx)`.
    - `mode`: sampler mode.
    - `max_steps`: episode length [steps].
    - `**kwargs`: further keywords of `make_dso_params`.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    from powerzoojax.data import NonstationarySampler, apply_drift

    if feeder_shapes is None:
        feeder_shapes = make_synthetic_feeder_shapes(max(2 * int(total_episodes), 10 * int(max_steps)))
    total = _feeder_array(feeder_shapes).shape[0]
    sampler = NonstationarySampler(
        total, total_episodes, max_steps=max_steps, drift_rate=drift_rate, rolling_sigma_steps=rolling_sigma_steps
    )
    config = sampler.sample(episode_idx, jax.random.PRNGKey(int(episode_idx)) if key is None else key, mode=mode)
    params = make_dso_params(case, feeder_shapes=feeder_shapes, max_steps=max_steps,
                             episode_start=config.episode_start, **kwargs)
    p, q = apply_drift(params.p_load_profiles, params.q_load_profiles, config.drift_factor)
    return params.with_load_profiles(jnp.asarray(p), jnp.asarray(q))
