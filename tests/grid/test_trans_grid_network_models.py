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
        params = make_trans_params(case5, physics=physics, solver_mode=solver_mode, pf_method="newton", opf_tol=2e-4)
        model = params.network_model
        assert type(model) is outer, (physics, solver_mode)
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
