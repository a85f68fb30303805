"""The compiled training chunk stays on the device: no host callback anywhere in its jaxpr
(PPO, PPO-Lagrangian, typed IPPO, as the task presets use them), no implicit transfer
while it runs, one trace for every chunk, and the metrics of all the chunk's updates come
back together as one output (one transfer per chunk)."""

import pytest

# Primitives that call back to the host from inside a compiled program.
HOST_PRIMITIVES = ("callback", "outside_call", "host_call", "debug_print", "infeed", "outfeed")


def _primitives(jaxpr) -> set[str]:
    """Names of every primitive in `jaxpr` and in the jaxprs nested in its equations
    (scan / cond / while bodies, pjit, custom_jvp / custom_vjp, remat, shard_map)."""
    from jax.extend import core as jcore

    found: set[str] = set()
    stack = [jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr]
    while stack:
        jx = stack.pop()
        for eqn in jx.eqns:
            found.add(eqn.primitive.name)
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    if isinstance(sub, jcore.ClosedJaxpr):
                        stack.append(sub.jaxpr)
                    elif isinstance(sub, jcore.Jaxpr):
                        stack.append(sub)
    return found


def _host_calls(primitives: set[str]) -> list[str]:
    return sorted(p for p in primitives if any(h in p for h in HOST_PRIMITIVES))


def test_the_walker_finds_a_host_callback_nested_in_a_scan():
    """Control: a debug print two levels down (a cond inside a scan) and a pure callback in a
    scan body are found."""
    import jax
    import jax.numpy as jnp

    def body(c, x):
        c = jax.lax.cond(x > 0, lambda v: v + 1.0, lambda v: v, c)
        jax.debug.print("c = {c}", c=c)
        return c, c

    jaxpr = jax.make_jaxpr(lambda xs: jax.lax.scan(body, jnp.zeros(()), xs))(jnp.arange(3.0))
    assert _host_calls(_primitives(jaxpr)) in (["debug_print"], ["debug_callback"])
    import numpy as np

    def callback_body(c, x):
        y = jax.pure_callback(np.sin, jax.ShapeDtypeStruct((), jnp.float32), x)
        return c + y, c

    with_callback = jax.make_jaxpr(lambda xs: jax.lax.scan(callback_body, jnp.zeros(()), xs))(jnp.arange(3.0))
    assert _host_calls(_primitives(with_callback)) == ["pure_callback"]
    plain = jax.make_jaxpr(lambda xs: jax.lax.scan(lambda c, x: (c + x, c), 0.0, xs))(jnp.arange(3.0))
    assert _host_calls(_primitives(plain)) == []


@pytest.fixture(scope="module")
def trainers(case5_log, case5_safe, trans5, tiny_config):
    """PPO, PPO-Lagrangian and typed IPPO trainers on case 5 (tiny configs)."""
    from powerzoojax.rl import GridMARLEnv, make_train

    env, params = trans5
    marl = GridMARLEnv(env, params)
    return {
        "ppo": make_train(case5_log, tiny_config),
        "ppo_lagrangian": make_train(case5_safe, tiny_config.replace(algo="ppo_lagrangian", cost_thresholds=(0.0,))),
        "ippo_typed": make_train(marl, tiny_config.replace(algo="ippo_typed")),
    }


@pytest.mark.parametrize("algo", ["ppo", "ppo_lagrangian", "ippo_typed"])
def test_the_training_chunk_has_no_host_callback(trainers, algo):
    import jax
    import jax.random as jr

    trainer = trainers[algo]
    state = jax.eval_shape(trainer.init, jr.PRNGKey(0))
    jaxpr = jax.make_jaxpr(trainer.run_chunk, static_argnums=1)(state, 2)
    primitives = _primitives(jaxpr)
    assert "scan" in primitives  # the walk reached the update loop
    assert _host_calls(primitives) == [], f"{algo}: host callbacks in the compiled chunk"


@pytest.mark.parametrize("algo", ["ppo", "ippo_typed"])
def test_a_chunk_runs_without_implicit_transfers_traces_once_and_returns_every_update(trainers, algo):
    import jax
    import jax.random as jr
    import numpy as np

    trainer = trainers[algo]
    traces = []
    update = trainer.update

    def counted(state):
        traces.append(1)
        return update(state)

    chunk = 2
    run = jax.jit(lambda s: type(trainer).run_chunk(_Counting(trainer, counted), s, chunk))
    state = trainer._jit_init(jr.PRNGKey(0))
    state, metrics = run(state)  # compiles: traces the update
    first = len(traces)
    assert first > 0
    with jax.transfer_guard("disallow"):  # an implicit host round-trip inside the call would raise
        state, metrics = run(state)
        assert len(traces) == first  # the same program for every chunk
        host = jax.device_get(metrics)  # the explicit, single transfer of the chunk's metrics
    assert all(np.shape(v)[0] == chunk for v in host.values())
    np.testing.assert_array_equal(host["update"], [3.0, 4.0])


class _Counting:
    """The trainer with its `update` replaced (so the chunk's traces of it are counted)."""

    def __init__(self, trainer, update):
        self._trainer, self.update = trainer, update

    def __getattr__(self, name):
        return getattr(self._trainer, name)
