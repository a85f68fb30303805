"""Envs stepped eagerly (no ``jit``) compile their solvers once, not on every step.

Outside ``jit`` JAX runs op by op and compiles each loop it meets, keyed on the loop
body's identity; the solvers build their bodies as closures, so before their entry points
were jitted every eager step compiled them again (DC-OPF and UC steps 4-5 s each).
"""

import jax
import jax.numpy as jnp
import pytest
from jax import monitoring

_COMPILES: list[str] = []


def _count_backend_compiles(name: str, duration: float, **_kwargs) -> None:
    if name == "/jax/core/compile/backend_compile_duration":
        _COMPILES.append(name)


monitoring.register_event_duration_secs_listener(_count_backend_compiles)


def _envs():
    from powerzoojax.case import load_case
    from powerzoojax.grid import DistGridEnv, TransGridEnv, UnitCommitmentEnv, make_dist_params, make_trans_params
    from powerzoojax.grid import make_uc_params

    return {
        "trans-dcopf": lambda: (TransGridEnv(), make_trans_params(load_case("5"), solver_mode=1)),
        "trans-acpf": lambda: (TransGridEnv(), make_trans_params(load_case("5"), physics=1)),
        "dist-33bw": lambda: (DistGridEnv(), make_dist_params(load_case("33bw"))),
        "uc": lambda: (UnitCommitmentEnv(), make_uc_params(load_case("5"))),
    }


@pytest.mark.parametrize("name", ["trans-dcopf", "trans-acpf", "dist-33bw", "uc"])
def test_eager_steps_after_the_first_compile_nothing(name):
    env, params = _envs()[name]()
    _, state = env.reset(jax.random.PRNGKey(0), params)
    action = 0.3 * jnp.ones(env.action_space(params).shape)
    out = env.step(jax.random.PRNGKey(1), state, action, params)
    jax.block_until_ready(out)
    before = len(_COMPILES)
    for i in range(2, 4):
        out = env.step(jax.random.PRNGKey(i), out[1], action, params)
        jax.block_until_ready(out)
    assert len(_COMPILES) == before, f"{name}: {len(_COMPILES) - before} XLA compiles in two eager steps"
