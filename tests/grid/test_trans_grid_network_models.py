"""TransGridEnv's network models: the mode's model is chosen in make_trans_params, and a model
of the user's own plugs in (the example of the models' module docstring, run verbatim)."""

import textwrap

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def _docstring_example() -> dict:
    """Run the code block of the network models' module docstring; return its namespace."""
    from powerzoojax.grid.transmission import _network_models

    doc = _network_models.__doc__
    block = doc[doc.index("```python\n") + len("```python\n") : doc.rindex("```")]
    namespace: dict = {}
    exec(compile(textwrap.dedent(block), "network-models-docstring", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def lossy():
    return _docstring_example()


def test_each_mode_gets_its_model(case5):
    from powerzoojax.grid import make_trans_params
    from powerzoojax.grid.transmission import ACOPFModel, ACPowerFlowModel, DCOPFModel, DCPowerFlowModel

    models = {
        (0, 0): (DCPowerFlowModel, None),
        (1, 0): (ACPowerFlowModel, DCPowerFlowModel),
        (0, 1): (DCOPFModel, None),
        (1, 1): (ACPowerFlowModel, DCOPFModel),
        (1, 2): (ACOPFModel, None),
    }
    for (physics, solver_mode), (outer, inner) in models.items():
        # Each mode takes only the options its model reads.
        options = {"pf_method": "newton"} if outer is ACPowerFlowModel else {}
        options |= {"opf_tol": 2e-4} if solver_mode == 1 else {}
        params = make_trans_params(case5, physics=physics, solver_mode=solver_mode, **options)
        model = params.network_model
        assert type(model) is outer, (physics, solver_mode)
        assert (params.physics, params.solver_mode) == (physics, solver_mode)
        if inner is not None:
            assert type(model.dispatch_model) is inner
            assert model.method == "newton"
        if isinstance(model, DCOPFModel):
            assert model.tol == 2e-4
        assert (params.acpf is not None) == (outer is ACPowerFlowModel)
        assert (params.dcopf is not None) == (solver_mode == 1)
        assert (params.acopf is not None) == (solver_mode == 2)
        assert (params.load_q_mvar is not None) == model.is_ac == (physics == 1 or solver_mode == 2)


def test_a_user_model_plugs_in(case5, lossy):
    from powerzoojax.grid import TransGridEnv, make_trans_params
    from powerzoojax.testing import check_env_api

    env, params = TransGridEnv(), lossy["params"]
    assert type(params.network_model).__name__ == "LossyDCModel"
    lossless = make_trans_params(case5)
    assert env.obs_dim(params) == env.obs_dim(lossless) and params.load_q_mvar is None
    check_env_api(env, params)

    action = jnp.linspace(-0.5, 0.5, case5.n_units)
    step = jax.jit(env.step)
    out = {}
    for name, p in (("lossy", params), ("lossless", lossless)):
        _, state = jax.jit(env.reset)(jr.PRNGKey(0), p)
        out[name] = step(jr.PRNGKey(1), state, action, p)
    lossy_state, lossless_state = out["lossy"][1], out["lossless"][1]
    losses = 0.03 * float(np.sum(np.asarray(params.load_profiles[0])))
    extra = np.asarray(lossy_state.unit_power_mw) - np.asarray(lossless_state.unit_power_mw)
    weights = np.asarray(params.network.slack_unit_weights)
    np.testing.assert_allclose(extra, losses * weights, rtol=1e-5, atol=1e-3)
    assert losses > 1.0 and float(out["lossy"][2]) < float(out["lossless"][2])  # reward: −cost, higher cost
    np.testing.assert_array_equal(np.asarray(lossy_state.line_flow_mw), np.asarray(lossless_state.line_flow_mw))


def test_params_vmap_over_a_user_model_leaf_in_one_compile(lossy):
    import equinox as eqx

    from powerzoojax.grid import TransGridEnv

    env, params = TransGridEnv(), lossy["params"]
    fractions = jnp.asarray([0.0, 0.03, 0.06], jnp.float32)
    batch = jax.vmap(lambda f: eqx.tree_at(lambda p: p.network_model.loss_fraction, params, f))(fractions)
    traces = []

    @jax.jit
    def run(key, p):
        traces.append(1)
        _, state = jax.vmap(env.reset, in_axes=(None, 0))(key, p)
        action = jnp.zeros((3, p.case.n_units), jnp.float32)
        return jax.vmap(env.step, in_axes=(None, 0, 0, 0))(key, state, action, p)

    _, state, reward, *_ = run(jr.PRNGKey(0), batch)
    run(jr.PRNGKey(1), jax.tree.map(lambda x: x, batch))
    assert len(traces) == 1
    slack_total = np.asarray(state.unit_power_mw).sum(axis=1)
    load = float(np.sum(np.asarray(params.load_profiles[0])))
    np.testing.assert_allclose(slack_total - slack_total[0], np.asarray(fractions) * load, rtol=1e-4)
    assert np.all(np.diff(np.asarray(reward)) < 0)


def test_a_built_in_model_passed_by_hand_equals_its_mode(case5):
    from powerzoojax.grid import TransGridEnv, make_trans_params
    from powerzoojax.grid.transmission import DCOPFModel

    env = TransGridEnv()
    by_mode = make_trans_params(case5, solver_mode=1, max_steps=2)
    by_hand = make_trans_params(case5, max_steps=2, network_model=DCOPFModel.of_case(case5))
    run = jax.jit(lambda p: env.step(jr.PRNGKey(1), env.reset(jr.PRNGKey(0), p)[1], jnp.zeros(case5.n_units), p))
    for a, b in zip(jax.tree.leaves(run(by_mode)), jax.tree.leaves(run(by_hand)), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_network_model_must_be_a_network_model(case5):
    from powerzoojax.grid import make_trans_params

    # TypeError from our check, or from beartype when annotations are checked: both name the argument.
    with pytest.raises(TypeError, match="network_model"):
        make_trans_params(case5, network_model="dc")


def _same_tree(a, b) -> None:
    import jax

    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_mode_codes_are_aliases_of_the_models(case5):
    """Each (physics, solver_mode) pair builds the very model its factory builds: the two
    params are the same pytree, leaf for leaf, with the same static fields and codes."""
    from powerzoojax.grid import make_trans_params
    from powerzoojax.grid.transmission import ACOPFModel, ACPowerFlowModel, DCOPFModel, DCPowerFlowModel

    by_model = {
        (0, 0): DCPowerFlowModel.of_case(case5),
        (0, 1): DCOPFModel.of_case(case5, tol=2e-4),
        (1, 0): ACPowerFlowModel.of_case(case5, method="newton", failure_cost=50.0),
        (1, 1): ACPowerFlowModel.of_case(case5, DCOPFModel.of_case(case5, max_iter=40), warm_start=True),
        (0, 2): ACOPFModel.of_case(case5, tol=2e-4),
    }
    options = {
        (0, 0): {},
        (0, 1): {"opf_tol": 2e-4},
        (1, 0): {"pf_method": "newton", "pf_failure_cost": 50.0},
        (1, 1): {"opf_max_iter": 40, "pf_warm_start": True},
        (0, 2): {"acopf_tol": 2e-4},
    }
    for (physics, solver_mode), model in by_model.items():
        from_codes = make_trans_params(case5, max_steps=2, physics=physics, solver_mode=solver_mode, **options[(physics, solver_mode)])
        from_model = make_trans_params(case5, max_steps=2, network_model=model)
        _same_tree(from_codes, from_model)
        # The codes given with an agreeing model change nothing.
        _same_tree(from_model, make_trans_params(case5, max_steps=2, physics=physics, solver_mode=solver_mode, network_model=model))
    # The AC-OPF runs under either physics code; the params keep the one given.
    assert make_trans_params(case5, physics=1, network_model=by_model[(0, 2)]).physics == 1


@pytest.mark.parametrize(
    ("codes", "model", "message"),
    [
        ({"physics": 1}, "dcopf", r"physics=1 conflicts with network_model=DCOPFModel \(DC-OPF dispatch, DC power flow, physics=0\)"),
        ({"solver_mode": 1}, "dc", r"solver_mode=1 conflicts with network_model=DCPowerFlowModel .*solver_mode=0"),
        ({"solver_mode": 0}, "acopf", r"solver_mode=0 conflicts with network_model=ACOPFModel \(AC-OPF, solver_mode=2\)"),
        ({"physics": 0}, "ac", r"physics=0 conflicts with network_model=ACPowerFlowModel"),
    ],
)
def test_codes_that_disagree_with_the_model_raise_naming_both(case5, codes, model, message):
    from powerzoojax.grid import make_trans_params
    from powerzoojax.grid.transmission import ACOPFModel, ACPowerFlowModel, DCOPFModel, DCPowerFlowModel

    models = {
        "dc": lambda: DCPowerFlowModel.of_case(case5), "dcopf": lambda: DCOPFModel.of_case(case5),
        "ac": lambda: ACPowerFlowModel.of_case(case5), "acopf": lambda: ACOPFModel.of_case(case5),
    }
    with pytest.raises(ValueError, match=message):
        make_trans_params(case5, network_model=models[model](), **codes)


def test_codes_with_a_model_of_your_own_raise(case5, lossy):
    from powerzoojax.grid import make_trans_params

    model = lossy["params"].network_model
    with pytest.raises(ValueError, match=r"physics=0 picks a built-in model, but network_model=LossyDCModel is a model of your own"):
        make_trans_params(case5, physics=0, network_model=model)
    assert (lossy["params"].physics, lossy["params"].solver_mode) == (0, 0)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"pf_method": "newton"}, r"pf_method='newton' configures a model that physics=0, solver_mode=0 \(DC power flow"),
        ({"physics": 1, "opf_tol": 1e-3}, r"opf_tol=0.001 configures a model that physics=1, solver_mode=0"),
        ({"solver_mode": 1, "pf_failure_cost": 5.0, "acopf_max_iter": 9}, r"pf_failure_cost=5.0, acopf_max_iter=9 configure a model"),
        ({"solver_mode": 2, "opf_warm_start": True}, r"opf_warm_start=True configures a model that physics=0, solver_mode=2 \(AC-OPF\)"),
        ({"physics": 1, "solver_mode": 1, "acopf_tol": 1e-3}, r"acopf_tol=0.001 configures"),
        ({"model": "dcopf", "opf_tol": 1e-3}, r"opf_tol=0.001 configures a model that network_model=DCOPFModel \(its options are its own"),
    ],
)
def test_an_option_the_chosen_model_does_not_read_raises(case5, kwargs, named):
    from powerzoojax.grid import make_trans_params
    from powerzoojax.grid.transmission import DCOPFModel

    kwargs = dict(kwargs)
    if kwargs.pop("model", None) == "dcopf":
        kwargs["network_model"] = DCOPFModel.of_case(case5)
    with pytest.raises(TypeError, match=named):
        make_trans_params(case5, **kwargs)


def test_options_left_at_their_defaults_are_accepted_in_every_mode(case5):
    from powerzoojax.grid import make_trans_params
    from powerzoojax.grid.transmission import DCOPFModel

    defaults = {"pf_method": "fdlf", "pf_tol": 1e-5, "opf_max_iter": 30, "acopf_tol": 1e-4, "pf_failure_cost": 100}
    make_trans_params(case5, max_steps=2, **defaults)
    make_trans_params(case5, max_steps=2, network_model=DCOPFModel.of_case(case5), **defaults)


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (lambda c, m: m.DCOPFModel.of_case(c, max_iter=0), r"DCOPFModel: max_iter must be a positive integer, got 0"),
        (lambda c, m: m.DCOPFModel.of_case(c, tol=-1e-4), r"DCOPFModel: tol must be > 0, got -0.0001"),
        (lambda c, m: m.ACPowerFlowModel.of_case(c, method="gauss"), r"ACPowerFlowModel: method must be one of \('newton', 'fdlf', 'fdlf_only'\), got 'gauss'"),
        (lambda c, m: m.ACPowerFlowModel.of_case(c, max_iter=-3), r"ACPowerFlowModel: max_iter must be a positive integer, got -3"),
        (lambda c, m: m.ACPowerFlowModel.of_case(c, tol=float("nan")), r"ACPowerFlowModel: tol must be finite, got nan"),
        (lambda c, m: m.ACOPFModel.of_case(c, max_iter=0), r"ACOPFModel: max_iter must be a positive integer, got 0"),
        (lambda c, m: m.ACOPFModel.of_case(c, failure_cost=-1.0), r"ACCaseData.of_case: failure_cost must be >= 0, got -1.0"),
        (lambda c, m: m.ACPowerFlowModel.of_case(c, failure_cost=float("inf")), r"ACCaseData.of_case: failure_cost must be finite, got inf"),
    ],
)
def test_a_model_refuses_a_bad_solver_option_naming_it(case5, build, named):
    from powerzoojax.grid import transmission

    with pytest.raises(ValueError, match=named):
        build(case5, transmission)


def test_a_bad_static_option_is_refused_however_the_model_is_built(case5):
    import dataclasses

    from powerzoojax.grid.transmission import ACPowerFlowModel

    model = ACPowerFlowModel.of_case(case5)
    with pytest.raises(ValueError, match=r"ACPowerFlowModel: newton_step must be one of \('auto', 'dense', 'krylov'\), got 'lu'"):
        dataclasses.replace(model, newton_step="lu")
