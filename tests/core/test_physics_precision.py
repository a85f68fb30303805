"""Every matrix product in the physics names its precision.

A `dot_general` with no precision runs at the backend's default: one bfloat16 pass on a
TPU, TF32 on recent NVIDIA GPUs, or whatever the user set globally. The physics pins
`PHYSICS_PRECISION` instead, so its results do not depend on the device. These tests walk
the jaxprs of every registered single-agent env's `reset` and `step` (sub-jaxprs of loops,
conditionals, custom rules and linear solves included) and of the implicit gradients, and
fail on any product whose precision is unset.
"""

import jax
import jax.numpy as jnp
import pytest
from jax.extend import core as jex_core


def _sub_jaxprs(params):
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, jex_core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, jex_core.Jaxpr):
                yield item


def unset_products(jaxpr) -> list[str]:
    """`file:line` of every `dot_general` in `jaxpr` (recursively) whose precision is unset."""
    from jax._src import source_info_util

    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general" and eqn.params.get("precision") is None:
            frame = source_info_util.user_frame(eqn.source_info.traceback)
            found.append(f"{frame.file_name}:{frame.start_line}" if frame else str(eqn))
        for sub in _sub_jaxprs(eqn.params):
            found.extend(unset_products(sub))
    return found


def test_the_walker_finds_an_unset_product_inside_a_loop():
    def f(a, b):
        return jax.lax.fori_loop(0, 2, lambda i, x: x @ b, a)

    found = unset_products(jax.make_jaxpr(f)(jnp.ones((2, 2)), jnp.ones((2, 2))).jaxpr)
    assert len(found) == 1 and __file__ in found[0]


def test_the_physics_wrappers_pin_the_precision_under_any_global_setting():
    from powerzoojax.core import _precision as hp

    with jax.default_matmul_precision("bfloat16"):
        jaxpr = jax.make_jaxpr(lambda a: hp.matmul(a, a) + hp.dot(a, a) + hp.einsum("ij,jk->ik", a, a))(jnp.ones((2, 2)))
    precisions = [e.params["precision"] for e in jaxpr.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert len(precisions) == 3
    assert all(p == (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST) for p in precisions)


# The largest cases build their params for up to half a minute each; their products are
# the same code as case 300's, so the default run leaves them to `-m large_case`.
_LARGE = ("case1354pegase", "case2383wp")


def _env_ids():
    from powerzoojax.envs import list_envs

    return [
        pytest.param(env_id, marks=pytest.mark.large_case) if any(c in env_id for c in _LARGE) else env_id
        for env_id in list_envs(multi_agent=False)
    ]


@pytest.mark.parametrize("env_id", _env_ids())
def test_env_reset_and_step_name_the_precision_of_every_product(env_id):
    from powerzoojax.envs import make

    env, params = make(env_id)
    key = jax.random.PRNGKey(0)
    reset = jax.make_jaxpr(env.reset)(key, params)
    _, state = jax.eval_shape(env.reset, key, params)
    action = jax.eval_shape(env.action_space(params).sample, key)
    step = jax.make_jaxpr(env.step)(key, state, action, params)
    found = unset_products(reset.jaxpr) + unset_products(step.jaxpr)
    assert not found, f"{env_id}: {len(found)} products with no precision, first at {sorted(set(found))[:5]}"


# One id per family and mode: the gradient of a step goes through every implicit-gradient
# rule (AC power flow, AC-OPF, DC-OPF, the radial sweep, the market clearing).
_GRADIENT_IDS = (
    "TransGrid-case14-dc-v0", "TransGrid-case14-dcopf-v0", "TransGrid-case14-ac-v0", "TransGrid-case14-acopf-v0",
    "TransGrid-case14-dcopf_ac-v0", "UnitCommitment-case14-v0", "DistGrid-case33bw-v0", "DistGrid3Phase-case123-v0",
    "CostBasedMarket-case5-v0", "BidBasedMarket-case5-v0", "dc_microgrid-v0", "ders-v0",
)


def _installed_gradient_ids():
    from powerzoojax.envs import list_envs

    return [env_id for env_id in _GRADIENT_IDS if env_id in list_envs()]


@pytest.mark.parametrize("env_id", _installed_gradient_ids())
def test_the_gradient_of_a_step_names_the_precision_of_every_product(env_id):
    from powerzoojax.envs import make

    env, params = make(env_id)
    key = jax.random.PRNGKey(0)
    _, state = jax.eval_shape(env.reset, key, params)
    action = jax.eval_shape(env.action_space(params).sample, key)

    def step_value(a, s):
        _, _, reward, costs, _, _ = env.step(key, s, a, params)
        return reward + jnp.sum(costs)

    found = unset_products(jax.make_jaxpr(jax.grad(step_value))(action, state).jaxpr)
    assert not found, f"{env_id}: {len(found)} products with no precision, first at {sorted(set(found))[:5]}"


def test_the_sensitivities_name_the_precision_of_every_product():
    from powerzoojax.case import load_case
    from powerzoojax.physics import ac_ptdf, lmp_load_sensitivity, make_ac_network, make_dc_opf_setup, voltage_var_sensitivity

    case = load_case("14")
    net = make_ac_network(case)
    p_gen, load_p, load_q = (jnp.asarray(x, jnp.float32) for x in (case.unit_pg, case.node_pd, case.node_qd))
    jaxprs = [
        jax.make_jaxpr(lambda p, lp, lq: ac_ptdf(net, p, None, lp, lq))(p_gen, load_p, load_q),
        jax.make_jaxpr(lambda p, lp, lq: voltage_var_sensitivity(net, p, None, lp, lq))(p_gen, load_p, load_q),
        jax.make_jaxpr(lambda lp: lmp_load_sensitivity(make_dc_opf_setup(case), lp))(load_p),
    ]
    found = [site for j in jaxprs for site in unset_products(j.jaxpr)]
    assert not found, f"{len(found)} products with no precision, first at {sorted(set(found))[:5]}"
