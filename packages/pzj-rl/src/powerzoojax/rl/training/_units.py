"""Units of the cost channels, for labels in summaries, evaluation files and plots.

The envs document their cost channels in their docstrings; this table carries those
units (per step) so that a reported episode cost says what it counts. An episode cost is
the sum of the per-step values over the episode, hence the `·step` suffix.
"""

from typing import Any

# (env class name, channel) → per-step unit; (None, channel) is the fallback for any env.
_UNITS: dict[tuple[str | None, str], str] = {
    ("TransGridEnv", "thermal_overload"): "MW",
    ("TransGridEnv", "voltage_violation"): "p.u.",
    ("TransGridEnv", "power_balance"): "MW",
    ("UnitCommitmentEnv", "thermal_overload"): "MW",
    ("UnitCommitmentEnv", "reserve_shortfall"): "MW",
    ("UnitCommitmentEnv", "min_updown"): "violations",
    ("DistGridEnv", "voltage_violation"): "buses",
    ("DistGridEnv", "thermal_overload"): "branches",
    ("DistGrid3PhaseEnv", "voltage_violation"): "bus-phases",
    ("DistGrid3PhaseEnv", "thermal_overload"): "branches",
    ("DataCenterMicrogridEnv", "sla"): "expired tasks per GPU",
    ("DataCenterMicrogridEnv", "overtemp"): "fraction of the over-temperature range",
    ("DataCenterMicrogridEnv", "power_deficit"): "fraction of the load",
    (None, "thermal_overload"): "MW",
    (None, "reserve_shortfall"): "MW",
    (None, "cycle_throughput"): "$",
}
UNDECLARED = "env units"


def base_env_name(env: Any) -> str:
    """Class name of the physical env under any stack of wrappers."""
    from powerzoojax.core import Environment

    seen = 0
    while not isinstance(env, Environment) and seen < 16:
        inner = getattr(env, "env", None)
        env = inner if inner is not None else getattr(env, "wrapped", None)
        seen += 1
        if env is None:
            return ""
    return type(env).__name__ if env is not None else ""


def cost_unit(env_name: str, channel: str) -> str:
    """Per-step unit of `channel` on the env class `env_name` (`"env units"` when undocumented)."""
    return _UNITS.get((env_name, channel)) or _UNITS.get((None, channel)) or UNDECLARED


def reported_channels(env: Any) -> tuple[str, ...]:
    """The cost channels a trainer reports on `env`: the selected ones of a safe wrapper, else all."""
    names = getattr(env, "selected_constraint_names", None)
    if names:
        return tuple(names)
    try:
        return tuple(env.constraint_names())
    except (AttributeError, TypeError):
        return ()


def channel_units(env: Any) -> dict[str, str]:
    """`{channel: per-step unit · step}` for the reported channels of `env` (episode sums)."""
    name = base_env_name(env)
    return {c: f"{cost_unit(name, c)}·step" for c in reported_channels(env)}
