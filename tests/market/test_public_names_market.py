"""Names of the reference that pzj-market provides: facades, aliases, signatures, the
GenCos factories and metrics (rollouts over MarketMARLEnv: tests/rl/test_public_names_rl.py)."""

import importlib

import jax
import numpy as np
import pytest
from reference_public_names import all_names, signature_starts


@pytest.mark.parametrize(("facade", "count"), [("powerzoojax.envs", 25), ("powerzoojax.tasks", 5)])
def test_market_names_resolve(facade, count):
    module = importlib.import_module(facade)
    names = [n for n in all_names(facade) if module._LAZY.get(n, (None, None))[1] == "pzj-market"]
    assert len(names) == count
    for name in names:
        assert getattr(module, name) is not None, name


def test_aliases_are_our_objects():
    import powerzoojax.envs as envs
    import powerzoojax.market as market
    import powerzoojax.tasks as tasks
    from powerzoojax.market.tasks import gencos

    for name in ("CostMarketState", "BidMarketState", "MarketState"):
        assert getattr(envs, name) is market.MarketState
    for name in ("CostMarketParams", "BidMarketParams", "MarketParams"):
        assert getattr(envs, name) is market.MarketParams
    for name in ("make_cost_segments", "piecewise_ed", "OfferSCEDSetup", "OfferSCEDResult", "prepare_offer_sced", "offer_sced"):
        assert getattr(envs, name) is getattr(market, name)
    assert tasks.GencosTask is gencos.GenCosTask
    assert tasks.TASK_REGISTRY["gencos"][1] == "GenCosTask"


MARKET_SIGNATURES = [
    ("powerzoojax.envs", "make_cost_segments", "case, n_segments=5"),
    ("powerzoojax.envs", "prepare_offer_sced", "case, n_segments=3"),
    ("powerzoojax.envs", "offer_sced", "setup, node_load_mw, offer_prices=None, p_min_rt=None, p_max_rt=None, max_iter=..., tol=..."),
    ("powerzoojax.envs", "piecewise_ed", "setup, node_load_mw, offer_prices=None, max_iter=..., tol=..."),
    ("powerzoojax.tasks", "load_gencos_profiles", "case, split='train', ood_axis=None"),
    ("powerzoojax.tasks", "make_gencos_params", "case, load_profiles, n_segments=3, max_markup=2.0, max_steps=48"),
    ("powerzoojax.tasks", "make_gencos_env", "case, load_profiles, n_segments=3, max_markup=2.0, max_steps=48"),
    ("powerzoojax.tasks", "compute_gencos_metrics", "rollout, agent_names"),
]


@pytest.mark.parametrize(("module", "name", "spec"), MARKET_SIGNATURES, ids=[n for _, n, _ in MARKET_SIGNATURES])
def test_signatures(module, name, spec):
    signature_starts(getattr(importlib.import_module(module), name), spec)


def test_make_gencos_params_is_the_market_marl_factory():
    from powerzoojax.case import load_case
    from powerzoojax.market import make_market_marl_params
    from powerzoojax.tasks import load_gencos_profiles, make_gencos_params

    case = load_case("5")
    profiles = load_gencos_profiles(case, "iid")[:96]
    ours = make_gencos_params(case, profiles, 4, 1.5, 12)
    ref = make_market_marl_params(case, profiles, n_segments=4, max_markup=1.5, max_steps=12)
    assert jax.tree.structure(ours) == jax.tree.structure(ref)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(ref)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert ours.max_steps == 12 and ours.offer_sced_setup.n_segments == 4


def test_compute_gencos_metrics_formulas():
    from powerzoojax.tasks import compute_gencos_metrics

    lmp = np.array([[10.0, 12.0], [20.0, 22.0]])
    power = np.array([[30.0, 70.0], [50.0, 50.0]])
    rollout = {"profits": {"genco_0": np.array([1.0, 2.0]), "genco_1": np.array([3.0, 4.0])}, "gen_cost": np.array([5.0, 6.0]),
               "lmp": lmp, "unit_power": power, "sced_converged": np.array([1.0, 0.0]), "ramp_binding_rate": np.array([0.2, 0.4])}
    m = compute_gencos_metrics(rollout, ["genco_0", "genco_1"])
    assert m["total_profit"] == 10.0 and m["mean_profit_per_agent"] == 5.0 and m["total_gen_cost"] == 11.0
    assert m["mean_lmp"] == 16.0
    assert m["price_volatility"] == pytest.approx(np.std([11.0, 21.0]) / 16.0, rel=1e-6)
    assert m["hhi"] == pytest.approx(np.mean([0.3**2 + 0.7**2, 0.5]), rel=1e-6)
    assert m["sced_convergence_rate"] == 0.5 and m["ramp_binding_rate"] == pytest.approx(0.3)
    assert compute_gencos_metrics(rollout, ["genco_1"])["total_profit"] == 7.0
