"""Hypothesis strategies that draw valid (or, on request, invalid) inputs of the envs.

Install with the `testing` extra (`pip install "pzj-core[testing]"`). Every strategy
draws only inputs the library accepts unless asked for invalid ones (`invalid=True`),
and shrinks towards small, plain examples: the smallest cases, the shortest profiles,
actions at the low end of their space, the first keyword set.

Strategies that change a static field (a mode, `max_steps`, a case) change the compiled
program; the drawn values of array fields (load profiles, actions, keys, weights) do not.
Draw the former from small sets and the latter freely, and the jitted programs of
[`check_invariants`][powerzoojax.testing.check_invariants] are reused across examples.

>>> from hypothesis import given
>>> from powerzoojax.testing import strategies as pst
>>> @given(pst.cases(ids=("5", "14")), pst.prng_keys())
... def test_my_env(case, key): ...
"""

import functools
import math
from collections import deque
import jax
import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "powerzoojax.testing.strategies needs hypothesis: install the testing extra, "
        'pip install "pzj-core[testing]"'
    ) from err

from powerzoojax.case import CaseData, list_cases, load_case
from powerzoojax.core import Box, Discrete, MultiBinary, MultiDiscrete, Space

__all__ = [
    "action_sequences",
    "actions",
    "case_ids",
    "cases",
    "connected_line_outages",
    "dcmicrogrid_params_kwargs",
    "dist_params_kwargs",
    "load_profiles",
    "market_params_kwargs",
    "marl_action_dicts",
    "prng_keys",
    "trans_params_kwargs",
    "uc_params_kwargs",
]

# Bound used for an unbounded Box side when drawing: large enough to exercise clipping,
# small enough that float32 arithmetic on it stays exact to a few digits.
_UNBOUNDED_DRAW = 1e3
_NON_FINITE = (float("nan"), float("inf"), float("-inf"))


# --- cases -------------------------------------------------------------------------


def case_ids(
    grid_type: str | None = "transmission",
    *,
    max_buses: int = 120,
    phase: int | None = 1,
    source: str = "reference",
) -> st.SearchStrategy[str]:
    """Ids of shipped cases matching the filters, smallest first (shrinks to the smallest)."""
    return st.sampled_from(_matching_ids("case_ids", grid_type, max_buses, phase, source))


def _matching_ids(caller: str, grid_type: str | None, max_buses: int, phase: int | None, source: str) -> list[str]:
    ids = list_cases(grid_type=grid_type, max_buses=max_buses, phase=phase, source=source)
    if not ids:
        raise ValueError(
            f"{caller}: no {source} case with grid_type={grid_type!r}, phase={phase!r} and at most {max_buses} buses"
        )
    return ids


@functools.lru_cache(maxsize=32)
def _cached_case(case_id: str, source: str) -> CaseData:
    return load_case(case_id, source=source)


def cases(
    ids: tuple[str, ...] | None = None,
    *,
    grid_type: str | None = "transmission",
    max_buses: int = 120,
    source: str = "reference",
) -> st.SearchStrategy[CaseData]:
    """Shipped cases (loaded once per id and reused): from `ids`, or every case that
    `case_ids` lists for the filters; shrinks to the first (the smallest).

    The cases are loaded here, when the strategy is built, not while hypothesis draws:
    loading runs library code on the host, and nothing called during a draw may touch
    Python's global `random` state (a runtime type checker such as beartype does, when it
    samples an item of a container argument).
    """
    if ids is None:
        ids = tuple(_matching_ids("cases", grid_type, max_buses, 1, source))
    return st.sampled_from([_cached_case(str(case_id), source) for case_id in ids])


def _in_service(case: CaseData) -> np.ndarray:
    return np.asarray(case.line_status) > 0


def _connected_without(case: CaseData, out: np.ndarray) -> bool:
    """Whether every bus still reaches the slack bus over in-service lines not in `out`."""
    n = int(case.n_nodes)
    keep = _in_service(case) & ~out
    f = np.asarray(case.line_from_idx)[keep]
    t = np.asarray(case.line_to_idx)[keep]
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(f.tolist(), t.tolist()):
        neighbours[a].append(b)
        neighbours[b].append(a)
    seen = np.zeros(n, bool)
    start = int(case.slack_bus_idx)
    seen[start] = True
    queue = deque([start])
    while queue:
        for m in neighbours[queue.popleft()]:
            if not seen[m]:
                seen[m] = True
                queue.append(m)
    return bool(seen.all())


def connected_line_outages(case: CaseData, *, max_outages: int = 1) -> st.SearchStrategy[np.ndarray]:
    """Boolean masks over the case's lines (True = out) of at most `max_outages` in-service
    lines whose removal keeps every bus connected; shrinks to no outage. For
    `TransGridParams.with_line_outages` in the DC and AC power-flow modes, and for
    `powerzoojax.physics.ac_network_with_line_outages`."""
    in_service = np.flatnonzero(_in_service(case))
    n_lines = int(np.asarray(case.line_status).shape[0])

    # `list`, not `list[int]`: a function called while hypothesis draws must not consume
    # Python's global `random` state, and a runtime type checker (beartype, as the test
    # suite runs it) samples one item of an element-typed container hint with `random`.
    def mask_of(chosen: list) -> np.ndarray:
        mask = np.zeros(n_lines, bool)
        mask[np.asarray(chosen, int)] = True
        return mask

    subsets = st.lists(st.sampled_from(in_service.tolist()), max_size=max_outages, unique=True)
    return subsets.map(mask_of).filter(lambda mask: _connected_without(case, mask))


# --- profiles ----------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _shipped_shape(case_id_and_source: tuple[str, str]) -> np.ndarray:
    """A measured demand shape in [0, 1] (the first shipped load series, min-max scaled)."""
    from powerzoojax.data import case_load_profiles  # data needs the loader; import on use

    case = _cached_case(*case_id_and_source)
    profile = np.asarray(case_load_profiles(case, scaling="minmax"), np.float64)
    d_min = np.asarray(case.load_d_min, np.float64)
    span = np.asarray(case.load_d_max, np.float64) - d_min
    j = int(np.argmax(span))
    return (profile[:, j] - d_min[j]) / span[j]


def load_profiles(
    case: CaseData,
    n_rows: int | st.SearchStrategy[int] = st.integers(1, 48),
    *,
    scale: tuple[float, float] = (0.8, 1.1),
    shape: str = "either",
    case_id: str | None = None,
) -> st.SearchStrategy[np.ndarray]:
    """`(n_rows, n_loads)` float32 MW load profiles of `case`: finite, non-negative.

    Each row is `s · (d_min + u · (d_max − d_min))` with the scaling `s` drawn in
    `scale` and `u` per row either random in [0, 1] per load (`shape="random"`) or a
    window of a measured demand series shared by every load (`shape="shipped"`, needs
    `case_id` to find the case's data); `"either"` draws both. Shrinks to one row at
    the low end of each load's range.
    """
    if shape not in ("random", "shipped", "either"):
        raise ValueError(f"load_profiles: shape must be 'random', 'shipped' or 'either', got {shape!r}")
    if shape != "random" and case_id is None:
        if shape == "shipped":
            raise ValueError("load_profiles: shape='shipped' needs case_id (the id the case was loaded with)")
        shape = "random"
    lo, hi = float(scale[0]), float(scale[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 <= lo <= hi):
        raise ValueError(f"load_profiles: scale must be a finite range 0 <= low <= high, got {scale!r}")
    d_min = np.asarray(case.load_d_min, np.float64)
    d_max = np.asarray(case.load_d_max, np.float64)
    n_loads = d_min.shape[0]
    rows = n_rows if isinstance(n_rows, st.SearchStrategy) else st.just(int(n_rows))
    unit = st.floats(0.0, 1.0, allow_nan=False, width=32)
    # Built now, outside any draw (see `cases`): the measured shape comes from library code.
    series = _shipped_shape((case_id, "reference")) if shape != "random" and case_id is not None else None

    @st.composite
    def draw(draw_fn):
        t = draw_fn(rows)
        s = draw_fn(st.floats(lo, hi, allow_nan=False)) if hi > lo else lo
        kind = shape if shape != "either" else draw_fn(st.sampled_from(("random", "shipped")))
        if kind == "random":
            u = np.asarray(draw_fn(st.lists(unit, min_size=t * n_loads, max_size=t * n_loads)), np.float64).reshape(t, n_loads)
        else:
            assert series is not None  # kind == "shipped" only when the series was built
            start = draw_fn(st.integers(0, max(0, series.shape[0] - t)))
            u = np.broadcast_to(series[start : start + t, None], (t, n_loads))
        return (s * (d_min + u * (d_max - d_min))).astype(np.float32)

    return draw()


# --- params keyword sets -----------------------------------------------------------
# Keyword sets for the make_*_params factories. Each is a small set of static choices
# (each a compiled program) times freely drawn weights; the first of every choice is the
# factory's default, so examples shrink to the default env.

_HORIZONS = st.sampled_from((4, 2, 8))
_STEP_HOURS = st.sampled_from((0.5, 0.25, 1.0))


def _weight(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def trans_params_kwargs(*, modes: tuple[tuple[int, int], ...] = ((0, 0), (0, 1), (1, 0), (1, 1), (1, 2))) -> st.SearchStrategy[dict]:
    """Keyword sets for `make_trans_params(case, **kw)`: a `(physics, solver_mode)` mode,
    horizon, step length, the AC method (in the AC power-flow modes, the only ones that
    read it) and the reward's weights."""
    return st.fixed_dictionaries(
        {
            "mode": st.sampled_from(modes),
            "max_steps": _HORIZONS,
            "delta_t_hours": _STEP_HOURS,
            "cost_thermal_weight": _weight(0.0, 10.0),
            "reward_scale": _weight(1e-3, 1.0),
            "pf_method": st.sampled_from(("fdlf", "newton")),
        }
    ).map(_split_mode)


def _split_mode(kw: dict) -> dict:
    physics, solver_mode = kw.pop("mode")
    if physics != 1 or solver_mode == 2:  # only the AC power flow reads pf_method
        kw.pop("pf_method")
    return {**kw, "physics": physics, "solver_mode": solver_mode}


def uc_params_kwargs() -> st.SearchStrategy[dict]:
    """Keyword sets for `make_uc_params(case, **kw)`."""
    return st.fixed_dictionaries(
        {
            "max_steps": _HORIZONS,
            "reserve_margin_frac": _weight(0.0, 0.2),
            "enable_reserve": st.booleans(),
            "reward_scale": _weight(1e-5, 1e-2),
            "dispatch_preference_weight": _weight(0.0, 0.1),
        }
    )


def dist_params_kwargs() -> st.SearchStrategy[dict]:
    """Keyword sets for `make_dist_params(case, **kw)` (voltage band, DER limit, weights)."""
    return st.fixed_dictionaries(
        {
            "max_steps": _HORIZONS,
            "v_min": _weight(0.85, 0.95),
            "v_max": _weight(1.05, 1.15),
            "loss_penalty_weight": _weight(0.0, 1.0),
            "der_limit_pu": _weight(0.0, 0.01),
            "cost_mode": st.sampled_from(("aggregate", "per_bus")),
        }
    )


def market_params_kwargs() -> st.SearchStrategy[dict]:
    """Keyword sets for `make_cost_market_params` / `make_bid_market_params` (the battery
    they share and the horizon)."""

    def soc(kw: dict) -> dict:
        lo, hi = sorted((kw.pop("soc_a"), kw.pop("soc_b")))
        hi = max(hi, lo + 0.1)
        return {**kw, "battery_soc_range": (lo, hi), "battery_soc_init": 0.5 * (lo + hi)}

    return st.fixed_dictionaries(
        {
            "max_steps": _HORIZONS,
            "battery_power_mw": _weight(1.0, 100.0),
            "battery_energy_mwh": _weight(10.0, 400.0),
            "soc_a": _weight(0.0, 0.4),
            "soc_b": _weight(0.6, 0.9),
        }
    ).map(soc)


def dcmicrogrid_params_kwargs() -> st.SearchStrategy[dict]:
    """Keyword sets for `make_dcmicrogrid_params(**kw)` (battery, PV, diesel, weights)."""

    def soc(kw: dict) -> dict:
        lo, hi = kw.pop("soc_lo"), kw.pop("soc_hi")
        return {**kw, "battery_soc_min": lo, "battery_soc_max": hi, "battery_soc_init": 0.5 * (lo + hi)}

    return st.fixed_dictionaries(
        {
            "battery_e_mwh": _weight(0.5, 4.0),
            "battery_p_mw": _weight(0.1, 1.0),
            "soc_lo": _weight(0.05, 0.3),
            "soc_hi": _weight(0.7, 0.95),
            "pv_capacity_mw": _weight(0.0, 1.0),
            "dg_p_max_mw": _weight(0.0, 1.2),
            "w_cost": _weight(0.0, 1.0),
            "w_carbon": _weight(0.0, 1.0),
        }
    ).map(soc)


# --- actions and keys --------------------------------------------------------------


def prng_keys() -> st.SearchStrategy[jax.Array]:
    """JAX PRNG keys (`jax.random.PRNGKey(seed)`); shrinks to seed 0."""
    return st.integers(0, 2**32 - 1).map(jax.random.PRNGKey)


def _box_bounds(space: Box) -> tuple[np.ndarray, np.ndarray]:
    low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape)
    high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape)
    return np.clip(low, -_UNBOUNDED_DRAW, _UNBOUNDED_DRAW), np.clip(high, -_UNBOUNDED_DRAW, _UNBOUNDED_DRAW)


def _valid_flat(space: Space, n: int) -> st.SearchStrategy[np.ndarray]:
    """`n` valid actions of `space` stacked on a leading axis."""
    if isinstance(space, Box):
        low, high = _box_bounds(space)
        # Every entry drawn on its own (no fill value), each shrinking to 0: the low bound.
        # Drawn as an array, not a list, so nothing consumes Python's global `random` while
        # hypothesis draws (see `connected_line_outages`).
        unit = hnp.arrays(np.float32, (n, *space.shape), elements=st.floats(0.0, 1.0, width=32), fill=st.nothing())

        def place(u: np.ndarray) -> np.ndarray:
            u_arr = np.asarray(u, np.float64)
            # Clip: low + u·(high − low) may round past high in float32.
            return np.clip(low + u_arr * (high - low), low, high).astype(np.dtype(space.dtype))

        return unit.map(place)
    if isinstance(space, Discrete):
        return st.lists(st.integers(0, space.n - 1), min_size=n, max_size=n).map(lambda v: np.asarray(v, np.int32))
    if isinstance(space, MultiDiscrete):
        nvec = np.asarray(space.nvec, int)
        per = [st.integers(0, int(k) - 1) for k in nvec]
        return st.lists(st.tuples(*per), min_size=n, max_size=n).map(lambda v: np.asarray(v, np.int32).reshape(n, len(nvec)))
    if isinstance(space, MultiBinary):
        size = n * int(np.prod(space.shape, dtype=int))
        return st.lists(st.integers(0, 1), min_size=size, max_size=size).map(lambda v: np.asarray(v, np.int32).reshape((n, *space.shape)))
    raise TypeError(f"actions: no strategy for a space of type {type(space).__name__}")


def _corrupt(space: Space, valid: np.ndarray, draw_fn) -> np.ndarray:
    """`valid` with at least one entry replaced by a value outside the space."""
    out = np.array(valid, copy=True)
    flat = out.reshape(-1)
    idx = draw_fn(st.lists(st.integers(0, flat.size - 1), min_size=1, max_size=min(flat.size, 4), unique=True))
    for i in idx:
        if isinstance(space, Box):
            low, high = _box_bounds(space)
            lo, hi = low.reshape(-1)[i % low.size], high.reshape(-1)[i % high.size]
            flat[i] = draw_fn(st.sampled_from((*_NON_FINITE, hi + 1.0 + abs(hi), lo - 1.0 - abs(lo))))
        elif isinstance(space, Discrete):
            flat[i] = draw_fn(st.sampled_from((space.n, -1)))
        elif isinstance(space, MultiDiscrete):
            nvec = np.asarray(space.nvec, int)
            flat[i] = draw_fn(st.sampled_from((int(nvec[i % nvec.size]), -1)))
        else:
            flat[i] = draw_fn(st.sampled_from((2, -1)))
    return out


def action_sequences(space: Space, n_steps: int, *, invalid: bool = False) -> st.SearchStrategy[np.ndarray]:
    """`(n_steps, *space.shape)` action sequences; with `invalid=True` at least one entry is
    outside the space (NaN, ±inf or out of bounds for a Box, out of range for the integer
    spaces)."""
    if n_steps < 1:
        raise ValueError(f"action_sequences: n_steps must be >= 1, got {n_steps}")
    valid = _valid_flat(space, n_steps)
    if not invalid:
        return valid

    @st.composite
    def corrupted(draw_fn):
        return _corrupt(space, draw_fn(valid), draw_fn)

    return corrupted()


def actions(space: Space, *, invalid: bool = False) -> st.SearchStrategy[np.ndarray]:
    """One action of `space` (see `action_sequences`)."""
    return action_sequences(space, 1, invalid=invalid).map(lambda a: a[0])


def marl_action_dicts(action_spaces: dict[str, Space], *, invalid_agents: int = 0) -> st.SearchStrategy[dict[str, np.ndarray]]:
    """A dict of one action per agent from `{agent: space}` (e.g. a multi-agent env's
    `action_spaces(params)`); `invalid_agents` of them get an invalid action."""
    names = sorted(action_spaces)
    if not 0 <= invalid_agents <= len(names):
        raise ValueError(f"marl_action_dicts: invalid_agents must be in 0..{len(names)}, got {invalid_agents}")

    @st.composite
    def draw(draw_fn):
        bad = set(draw_fn(st.lists(st.sampled_from(names), min_size=invalid_agents, max_size=invalid_agents, unique=True))) if invalid_agents else set()
        return {a: draw_fn(actions(action_spaces[a], invalid=a in bad)) for a in names}

    return draw()
