"""The batched rollout sharded over 4 (forced) CPU devices equals the unsharded run."""

import json
import subprocess
import sys
import textwrap

from conftest import has_distribution

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp, jax.random as jr
    import numpy as np
    sys.path.insert(0, {tests!r})
    from toy_env import ToyEnv, make_toy_params
    from powerzoojax.utils.jax_utils import batch_reset, batch_rollout, make_env_mesh
    assert len(jax.devices()) == 4, jax.devices()

    env, params = ToyEnv(), make_toy_params(max_steps=8)
    n = 16
    keys = jr.split(jr.PRNGKey(0), n)
    _, states = batch_reset(env, keys, params)
    actions = jr.uniform(jr.PRNGKey(1), (n, 20, 1), minval=-1, maxval=1)
    mesh = make_env_mesh()
    plain = jax.jit(lambda k, s, a: batch_rollout(env, k, s, params, a))(keys, states, actions)
    sharded_fn = jax.jit(lambda k, s, a: batch_rollout(env, k, s, params, a, mesh=mesh))
    sharded = sharded_fn(keys, states, actions)
    rewards = sharded[2]
    n_shards = len({{s.device for s in rewards.addressable_shards}})
    same = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(sharded)))
    try:
        batch_rollout(env, keys[:6], jax.tree.map(lambda x: x[:6], states), params, actions[:6], mesh=mesh)
        err = None
    except ValueError as e:
        err = str(e)
    print(json.dumps({{"same": same, "n_shards": n_shards, "shape": list(rewards.shape), "err": err}}))
    """
)


def test_sharded_batch_rollout_equals_unsharded(tmp_path):
    import os

    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(tests=tests_dir)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["same"], "sharded rollout differs from the unsharded one"
    assert result["n_shards"] == 4 and result["shape"] == [16, 20]
    assert "must be divisible by the 4 devices" in result["err"]


@pytest.mark.skipif(not has_distribution("powerzoojax.grid"), reason="needs pzj-grid")
def test_sharded_trans_grid_rollout_equals_unsharded():
    import os

    code = textwrap.dedent(
        """
        import json
        import jax, jax.random as jr, numpy as np
        from powerzoojax.case import load_case
        from powerzoojax.envs import TransGridEnv, make_trans_params
        from powerzoojax.utils.jax_utils import batch_reset, batch_rollout, make_env_mesh
        case = load_case("5"); env = TransGridEnv(); params = make_trans_params(case, max_steps=48)
        keys = jr.split(jr.PRNGKey(0), 64)
        _, states = batch_reset(env, keys, params)
        actions = jr.uniform(jr.PRNGKey(1), (64, 48, case.n_units), minval=-1, maxval=1)
        mesh = make_env_mesh()
        a = jax.jit(lambda k, s, x: batch_rollout(env, k, s, params, x))(keys, states, actions)
        b = jax.jit(lambda k, s, x: batch_rollout(env, k, s, params, x, mesh=mesh))(keys, states, actions)
        close = all(np.allclose(np.asarray(u), np.asarray(v), rtol=1e-6, atol=1e-5) for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
        print(json.dumps({"close": close, "devices": len(b[2].sharding.device_set)}))
        """
    )
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"close": True, "devices": 4}
