"""Named, ready-to-train setups: `list_presets()`, `get_preset(name)`, `train(name)`.

All sixteen names of the reference exist and build their env (`preset.env_factory()`),
beside two analytic-policy-gradient presets on the same envs (`*-apg`) and the
reference's own case-5 configurations (`*-reference`, see below).
The IPPO presets add `normalize_rewards=True` (profits are in $, thousands per step) to
the reference configs. Data: `dso-nflex*` use the DSO task's synthetic feeder shapes,
`dc-microgrid*` the env's synthetic default profiles, `ders-medium*` and `tso-*` the
shipped SimBench profiles of their tasks, `gencos-case5-ippo` the GenCos task's GB
training profiles (`gencos-case5-ippo-dev`: a flat mid-load day, no data).
`case5-ippo-battery`: `GridMARLEnv` with 5 unit agents and 2 battery agents
(`battery_0` at bus 1, `battery_1` at bus 3; 20 MW / 50 MWh each).
`ders-medium`: `make_ders_marl_env(voltage_penalty=8.0)` (12 typed agents, local obs 15).

`case5-economic-dispatch`: `LogWrapper(TransGridEnv)` on case 5 with the nominal
load `0.5 · d_max` (750 MW in all), 48 half-hour steps; reward `−0.01 · generation
cost` with output outside a unit's limits priced at `CASE5_LIMIT_PRICE` = 300 $/MWh
(`make_trans_params(unit_limit_price=...)`). Constrains no cost channel: the power
balance is priced in the reward instead, because with the reference's cost model the
slack-bus units absorb the agent's imbalance at their own marginal cost (14–15 $/MWh,
the cheapest after the bus-5 unit), so PPO on the reward alone learns to run them past
their ratings (`power_balance` rises from 313 to 597 MW·step in 61 k steps). Priced above
every marginal cost of the case (10–40 $/MWh), leaving the limits never pays, and the
policy's return improves while `power_balance` falls to 0; `thermal_overload` stays 0
(at 750 MW even the cheapest dispatch keeps line 4–5 within its 240 MW rating).

`case5-economic-dispatch-reference`: the same env and PPO config with the reference's
reward-only cost model (`unit_limit_price=None`), identical to the reference preset of
that name, for comparing benchmark numbers. Constrains nothing; its policies break the
power balance (above).

`case5-economic-dispatch-apg`, `dso-nflex-apg`: the envs of `case5-economic-dispatch` and
`dso-nflex` trained by [`make_apg_train`][powerzoojax.rl.algos.make_apg_train]
(backpropagation through 8-step windows of the differentiable env, gradients clipped
at global norm 1). APG suits these dispatch problems, whose reward is a smooth function
of the action through the physics. Constrain nothing.

`case5-safe-dispatch`: the reference's reward-only env under `SafeRLWrapper` with the
`thermal_overload` and `power_balance` channels, each with a per-episode threshold of
0 (MW·step), trained by PPO-Lagrangian. The power-balance constraint binds on this data:
PPO on the same reward breaks it (above), the Lagrangian policy keeps the slack units
within their limits. The thermal channel stays 0 for both at this load.
`case5-safe-dispatch-reference`: the reference's `case5-safe-dispatch` (thermal
overload only, threshold 0), whose constraint never binds at the nominal load.

Every other preset's description names the cost channels it constrains ("constrains
none" where the env's costs are only logged).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

from powerzoojax.rl.algos._config import TrainConfig


class PresetDef(NamedTuple):
    """A preset: description, env factory, optional reward function, config.

    **Arguments:**

    - `description`: one line.
    - `env_factory`: `() -> env` (a bound wrapper or multi-agent adapter).
    - `reward_fn`: reward function of a `RewardWrapper`, or `None`.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    """

    description: str
    env_factory: Callable[[], Any]
    reward_fn: Callable | None
    config: TrainConfig


# Price of output outside a unit's limits in the case-5 presets [$/MWh]: far above every
# marginal cost of the case (10–40 $/MWh), so leaving the limits never pays.
CASE5_LIMIT_PRICE = 300.0


def _case5_env(safe_channels: tuple[str, ...] = (), *, priced: bool = False) -> Any:
    """Case 5 at its nominal load; `priced` prices output outside the unit limits in the
    reward, `safe_channels` constrains those channels at threshold 0 (SafeRLWrapper)."""
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    params = make_trans_params(load_case("5"), max_steps=48, unit_limit_price=CASE5_LIMIT_PRICE if priced else None)
    if safe_channels:
        return SafeRLWrapper(
            TransGridEnv(), params, selected_names=safe_channels, cost_thresholds=(0.0,) * len(safe_channels)
        )
    return LogWrapper(TransGridEnv(), params)


def _case5_marl_env() -> Any:
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.rl.marl._grid import GridMARLEnv

    return GridMARLEnv(TransGridEnv(), make_trans_params(load_case("5"), max_steps=48))


def _gencos_env(dev: bool) -> Any:
    import numpy as np
    from powerzoojax.case import load_case
    from powerzoojax.market import make_market_marl_params
    from powerzoojax.rl.marl._market import MarketMARLEnv

    case = load_case("5")
    if dev:
        # Flat mid-load day: every load at the middle of its [d_min, d_max] band (750 MW on case 5).
        mid = 0.5 * (np.asarray(case.load_d_min, np.float64) + np.asarray(case.load_d_max, np.float64))
        profiles = np.tile(mid, (48, 1))
    else:
        try:
            from powerzoojax.market.tasks.gencos import load_gencos_profiles
        except ImportError:
            raise NotImplementedError(
                "gencos-case5-ippo needs the GB training profiles (load_gencos_profiles of the GenCos task, "
                "powerzoojax.market.tasks.gencos): install the pzj-market distribution, or use gencos-case5-ippo-dev (flat mid-load profile)"
            ) from None
        profiles = load_gencos_profiles(case, "train")
    return MarketMARLEnv(make_market_marl_params(case, profiles, n_segments=3, max_markup=2.0))


def _case5_battery_marl_env() -> Any:
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.grid.resources import make_battery_bundle
    from powerzoojax.rl.marl._grid import GridMARLEnv

    case = load_case("5")
    batteries = make_battery_bundle(case, (1, 3), power_mw=20.0, energy_mwh=50.0)
    return GridMARLEnv(TransGridEnv(), make_trans_params(case, max_steps=48, resources=(batteries,)))


def _battery_env() -> Any:
    from powerzoojax.grid import BatteryEnv
    from powerzoojax.grid.resources import make_battery_params
    from powerzoojax.rl.wrappers._log import LogWrapper

    return LogWrapper(BatteryEnv(), make_battery_params(max_steps=48))


def _dso_env(safe: bool) -> Any:
    from powerzoojax.grid import DistGridEnv
    from powerzoojax.grid.tasks.dso import DSOTask
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    task = DSOTask(synthetic=True)
    params = task.make_params("train")
    if safe:
        spec = task.constraint_spec()
        return SafeRLWrapper(DistGridEnv(), params, selected_names=spec.selected_names, cost_thresholds=spec.thresholds)
    return LogWrapper(DistGridEnv(), params)


def _ders_env() -> Any:
    from powerzoojax.rl.marl._dist_grid import make_ders_marl_env

    return make_ders_marl_env(voltage_penalty=8.0)


def _tso_env(kind: str) -> Any:
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.grid.tasks import tso
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    if kind == "scuc":  # the TSO task's constraint spec (thermal and reserve, threshold 0)
        return SafeRLWrapper(
            UnitCommitmentEnv(), tso.make_tso_scuc_params(), selected_names=("thermal_overload", "reserve_shortfall"),
            cost_thresholds=(0.0, 0.0),
        )
    factory = tso.make_tso_ed_params if kind == "ed" else tso.make_tso_uc_params
    return LogWrapper(UnitCommitmentEnv(), factory())


def _dcmg_env(safe: bool) -> Any:
    from powerzoojax.grid import DataCenterMicrogridEnv, make_dcmicrogrid_params
    from powerzoojax.rl.wrappers._log import LogWrapper
    from powerzoojax.rl.wrappers._safe import SafeRLWrapper

    params = make_dcmicrogrid_params(max_steps=288)  # synthetic workload / PV / price profiles
    if safe:
        return SafeRLWrapper(
            DataCenterMicrogridEnv(), params, selected_names=("sla", "overtemp", "power_deficit"),
            cost_thresholds=(0.0, 0.0, 0.0),
        )
    return LogWrapper(DataCenterMicrogridEnv(), params)


_CASE5 = TrainConfig(
    algo="ppo",
    total_timesteps=200_000,
    num_envs=32,
    n_steps=48,
    n_minibatches=4,
    learning_rate=1e-3,
    ent_coef=0.0,
    normalize_rewards=True,
    eval_freq=10_000,
    eval_num_episodes=32,
)
_LARGE: dict[str, Any] = dict(hidden_dims=(128, 128), gamma=0.995, normalize_observations=True)
# APG: one clipped Adam step per backpropagated 8-step window of every env.
_APG = TrainConfig(
    algo="apg",
    total_timesteps=20_480,
    num_envs=16,
    n_steps=8,
    learning_rate=3e-3,
    max_grad_norm=1.0,
    eval_freq=2_048,
    eval_num_episodes=16,
)

PRESETS: dict[str, PresetDef] = {
    "battery-soc-tracking": PresetDef(
        "Single battery tracking a state-of-charge target (BatteryEnv, 48 steps); constrains none",
        _battery_env, None, TrainConfig(total_timesteps=100_000, num_envs=64, n_steps=48),
    ),
    "case5-economic-dispatch": PresetDef(
        "Case-5 DC economic dispatch, output outside unit limits priced at 300 $/MWh in the reward; "
        "constrains none (TransGridEnv, LogWrapper)",
        lambda: _case5_env(priced=True), None, _CASE5,
    ),
    "case5-economic-dispatch-reference": PresetDef(
        "The reference's case-5 economic dispatch, reward = generation cost only (slack units may leave "
        "their limits); constrains none",
        lambda: _case5_env(), None, _CASE5,
    ),
    "case5-economic-dispatch-apg": PresetDef(
        "Case-5 DC economic dispatch (limit-priced, as case5-economic-dispatch) by analytic policy gradient "
        "through the env; constrains none",
        lambda: _case5_env(priced=True), None, _APG,
    ),
    "case5-safe-dispatch": PresetDef(
        "Case-5 DC dispatch on the reference reward, constrains thermal_overload and power_balance "
        "(SafeRLWrapper, thresholds 0)",
        lambda: _case5_env(("thermal_overload", "power_balance")), None,
        _CASE5.replace(
            algo="ppo_lagrangian", learning_rate=2e-3, cost_thresholds=(0.0, 0.0), lambda_lr=0.5, cost_scale=1000.0
        ),
    ),
    "case5-safe-dispatch-reference": PresetDef(
        "The reference's case-5 safe dispatch: constrains thermal_overload only (threshold 0; never binds "
        "at the nominal load)",
        lambda: _case5_env(("thermal_overload",)), None,
        _CASE5.replace(
            algo="ppo_lagrangian", learning_rate=2e-3, cost_thresholds=(0.0,), lambda_lr=0.5, cost_scale=1000.0
        ),
    ),
    "case5-ippo": PresetDef(
        "Case-5 dispatch as 5 unit agents (GridMARLEnv, reference reward); constrains none",
        _case5_marl_env, None,
        TrainConfig(algo="ippo", total_timesteps=200_000, num_envs=16, n_steps=48, n_minibatches=4,
                    learning_rate=1e-3, ent_coef=0.0, normalize_rewards=True, eval_num_episodes=32),
    ),
    "case5-ippo-battery": PresetDef(
        "Case-5 dispatch, 5 units + batteries at buses 1 and 3 (7 agents, GridMARLEnv); constrains none",
        _case5_battery_marl_env, None,
        TrainConfig(algo="ippo", total_timesteps=200_000, num_envs=16, n_steps=48),
    ),
    "dso-nflex": PresetDef(
        "DSO loss minimisation with 6 flexible loads on case33bw (DistGridEnv); constrains none",
        lambda: _dso_env(False), None,
        TrainConfig(total_timesteps=3_000_000, num_envs=128, n_steps=48, **_LARGE),
    ),
    "dso-nflex-apg": PresetDef(
        "DSO loss minimisation on case33bw by analytic policy gradient through the feeder (DistGridEnv); constrains none",
        lambda: _dso_env(False), None,
        _APG.replace(total_timesteps=40_960, num_envs=32, hidden_dims=(128, 128), gamma=0.995,
                     normalize_observations=True, eval_freq=4_096),
    ),
    "dso-nflex-safe": PresetDef(
        "DSO loss minimisation; constrains voltage_violation (SafeRLWrapper, threshold 0)",
        lambda: _dso_env(True), None,
        TrainConfig(algo="ppo_lagrangian", total_timesteps=3_000_000, num_envs=128, n_steps=48,
                    cost_thresholds=(0.0,), **_LARGE),
    ),
    "ders-medium": PresetDef(
        "12 DER agents on case141, local observations (DistGridMARLEnv); constrains none (voltage shaped into the reward)",
        _ders_env, None,
        TrainConfig(algo="ippo_typed", total_timesteps=15_000_000, num_envs=64, n_steps=48, **_LARGE),
    ),
    "ders-medium-safe": PresetDef(
        "DERs with voltage shaping; constrains none (thresholds (0, 0, 0) are logged only)",
        _ders_env, None,
        TrainConfig(algo="ippo_typed", total_timesteps=15_000_000, num_envs=64, n_steps=48,
                    cost_thresholds=(0.0, 0.0, 0.0), **_LARGE),
    ),
    "tso-ed": PresetDef(
        "TSO economic dispatch on case118, commitment off (UnitCommitmentEnv); constrains none",
        lambda: _tso_env("ed"), None,
        TrainConfig(total_timesteps=5_000_000, num_envs=64, n_steps=48, hidden_dims=(256, 256), gamma=0.995,
                    normalize_observations=True),
    ),
    "tso-uc": PresetDef(
        "TSO unit commitment on case118, line-limited DC-OPF dispatch (UnitCommitmentEnv); constrains none",
        lambda: _tso_env("uc"), None,
        TrainConfig(total_timesteps=10_000_000, num_envs=64, n_steps=48, hidden_dims=(256, 256), gamma=0.995,
                    normalize_observations=True),
    ),
    "tso-scuc-safe": PresetDef(
        "TSO SCUC; constrains thermal_overload and reserve_shortfall (SafeRLWrapper, thresholds 0)",
        lambda: _tso_env("scuc"), None,
        TrainConfig(algo="ppo_lagrangian", total_timesteps=10_000_000, num_envs=64, n_steps=48,
                    hidden_dims=(256, 256), gamma=0.995, cost_thresholds=(0.0, 0.0), normalize_observations=True),
    ),
    "gencos-case5-ippo": PresetDef(
        "5 generating companies bidding in a case-5 market with GB load profiles (MarketMARLEnv); constrains none",
        lambda: _gencos_env(False), None,
        TrainConfig(algo="ippo", total_timesteps=5_000_000, num_envs=256, n_steps=48, hidden_dims=(128, 128),
                    gamma=0.995, eval_freq=100_000, normalize_rewards=True),
    ),
    "gencos-case5-ippo-dev": PresetDef(
        "GenCos market on a flat mid-load profile (MarketMARLEnv, no data needed); constrains none",
        lambda: _gencos_env(True), None,
        TrainConfig(algo="ippo", total_timesteps=5_000_000, num_envs=256, n_steps=48, hidden_dims=(128, 128),
                    gamma=0.995, eval_freq=100_000, normalize_rewards=True),
    ),
    "dc-microgrid": PresetDef(
        "Data-centre microgrid, 288 five-minute steps (DataCenterMicrogridEnv); constrains none",
        lambda: _dcmg_env(False), None,
        TrainConfig(total_timesteps=5_000_000, num_envs=128, n_steps=288, hidden_dims=(256, 256), gamma=0.999,
                    normalize_observations=True),
    ),
    "dc-microgrid-safe": PresetDef(
        "Data-centre microgrid; constrains sla, overtemp and power_deficit (SafeRLWrapper, thresholds 0)",
        lambda: _dcmg_env(True), None,
        TrainConfig(algo="ppo_lagrangian", total_timesteps=5_000_000, num_envs=128, n_steps=288,
                    hidden_dims=(256, 256), gamma=0.999, cost_thresholds=(0.0, 0.0, 0.0), normalize_observations=True),
    ),
}


def list_presets() -> list[dict[str, Any]]:
    """`[{name, description, algo, total_timesteps}]` for every preset, in a fixed order.

    **Returns:**

    A list of dicts, one per preset.
    """
    return [
        {"name": name, "description": p.description, "algo": p.config.algo, "total_timesteps": p.config.total_timesteps}
        for name, p in PRESETS.items()
    ]


def get_preset(name: str) -> PresetDef:
    """The preset `name`.

    **Arguments:**

    - `name`: preset name.

    **Returns:**

    The [`PresetDef`][powerzoojax.rl.training.PresetDef]; `KeyError` listing the valid
    names otherwise.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; presets are {list(PRESETS)}") from None
