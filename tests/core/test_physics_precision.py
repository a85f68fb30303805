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
