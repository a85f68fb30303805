"""The outer training loop every trainer shares: periodic evaluation inside the compiled
update, chunked runs for checkpointing, whole runs as one scan over updates, and the
placement of a run on a device mesh.

A trainer (a final subclass of the abstract `UpdateLoop` module) provides `init(key)`,
`update(state) -> (state, metrics)`, `result`, `n_updates` and `eval_every`; its data
always comes through the one rollout kernel.

Data parallelism (`mesh=`, a 1-D mesh over the devices of one or many processes): the
training state's per-env fields (`ENV_FIELDS`) are split over the mesh along the
env axis and everything else (policy, optimiser state, statistics, replay buffer, key)
is replicated; the compiled chunk is one program over these global arrays. The rollout
runs per device on its own envs (`shard_map`: no communication inside an env step, so
a batched solver's loop stops on its own envs' test); the learning step is left to
XLA's partitioner (sharded `jit`), which splits the minibatches over the devices and
inserts the all-reduces of the gradients, the batch statistics and the metrics. The
maths is the single-device trainer's: the same keys give the same run on any number of
devices and processes, up to the order of floating-point reductions.
"""

import abc
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, PyTree

import jax.random as jr
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from powerzoojax.core import Key, rollout
from powerzoojax.rl.algos._config import TrainConfig
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.core._distributed import put_global
from powerzoojax.core._types import where

# Fields of a training state whose leaves have the env axis first (split over the mesh).
ENV_FIELDS = ("env_state", "obs", "discounted_return", "episode_return")


def nan_like(tree: PyTree) -> PyTree:
    return jax.tree.map(lambda x: jnp.full(x.shape, jnp.nan, x.dtype), tree)


def _nan_of_shape(fn: Callable[..., Any], *args: Any) -> PyTree:
    """NaNs shaped like `fn(*args)`'s output, without running it."""
    return nan_like(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(fn, *args)))


# Cost channels the single-agent evaluation reports when the env's info has them.
EVAL_COST_KEYS = ("cost_voltage_violation", "reserve_shortfall", "cost_thermal_overload")


def eval_cost_metrics(info: dict[str, Array], max_steps: int, selected_names: tuple[str, ...] = ()) -> dict[str, Array]:
    """Cost metrics of deterministic evaluation episodes (`info` leaves `(episodes, steps, ...)`).

    `eval_total_cost`: mean episode sum of `info["cost_sum"]`;
    `eval_cost_per_step` = that / `max_steps`; for each of `EVAL_COST_KEYS` in
    `info`: `eval_<key>_total` (mean episode sum) and `eval_<key>_rate` (fraction of
    steps with a positive value); with `selected_names` (the channels of
    `info["constraint_costs"]` in that order: a `SafeRLWrapper`'s selected ones, or
    every channel of the env): `eval_cost_<name>`, the mean episode sum of each.
    """
    total = jnp.mean(jnp.sum(info["cost_sum"], axis=1))
    out = {"eval_total_cost": total, "eval_cost_per_step": total / max_steps}
    for key in EVAL_COST_KEYS:
        if key in info:
            x = info[key]
            out[f"eval_{key}_total"] = jnp.mean(jnp.sum(x.reshape(x.shape[:2] + (-1,)), axis=(1, 2)))
            out[f"eval_{key}_rate"] = jnp.mean((x > 0).astype(jnp.float32))
    if selected_names and info["constraint_costs"].shape[-1] == len(selected_names):
        per = jnp.mean(jnp.sum(info["constraint_costs"], axis=1), axis=0)
        out.update({f"eval_cost_{n}": per[i] for i, n in enumerate(selected_names)})
    return out


class Programs(NamedTuple):
    """The compile-on-first-call functions of a trainer (plain `jit` without a mesh, sharded
    `jit` with one) and, with a mesh, the sharding of every leaf of its training state.
    Each closes over the trainer, so its arrays are constants of the compiled programs."""

    init: Callable[[Key], Any]
    chunk: Callable[[Any, int], tuple[Any, dict[str, Array]]]
    train: Callable[[Key], tuple[Any, dict[str, Array]]]
    state_shardings: Any = None


def check_mesh(mesh: Mesh | None, num_envs: int) -> Mesh | None:
    """`mesh` when a trainer can run on it: 1-D, with a device count that divides `num_envs`."""
    if mesh is not None:
        if not isinstance(mesh, Mesh) or len(mesh.axis_names) != 1:
            raise ValueError(f"trainer mesh must be a 1-D jax.sharding.Mesh (make_env_mesh()), got {mesh!r}")
        n_dev = mesh.devices.size
        if num_envs % n_dev:
            raise ValueError(
                f"num_envs = {num_envs} must be divisible by the {n_dev} devices of the mesh "
                "(every device steps the same number of envs)"
            )
    return mesh


def compile_programs(loop: "UpdateLoop") -> Programs:
    """The `Programs` of a trainer whose fields are all set (the last step of its `__init__`)."""
    mesh = loop.mesh
    if mesh is None:
        return Programs(
            init=jax.jit(lambda key: loop.init(key)),
            chunk=jax.jit(lambda state, n: loop.run_chunk(state, n), static_argnums=1),
            train=jax.jit(lambda key: loop.train(key)),
        )
    rep = NamedSharding(mesh, PartitionSpec())
    split = NamedSharding(mesh, PartitionSpec(mesh.axis_names[0]))
    abstract = jax.eval_shape(loop.init, jax.ShapeDtypeStruct((2,), jnp.uint32))

    def sharding(path, _):
        return split if getattr(path[0], "name", None) in ENV_FIELDS else rep

    state = jax.tree_util.tree_map_with_path(sharding, abstract)
    return Programs(
        init=jax.jit(lambda key: loop.init(key), in_shardings=(rep,), out_shardings=state),
        chunk=jax.jit(
            lambda s, n: loop.run_chunk(s, n), static_argnums=1, in_shardings=(state,), out_shardings=(state, rep)
        ),
        train=jax.jit(lambda key: loop.train(key), in_shardings=(rep,), out_shardings=(state, rep)),
        state_shardings=state,
    )


class UpdateLoop(eqx.Module):
    """What every trainer is: an abstract Equinox module whose final subclasses (PPO, SAC,
    IPPO, APG) provide the fields below, `init`, `update` and `result`; the outer loop
    (periodic evaluation, chunked and whole runs, placement on a mesh) is written once here.

    A trainer is hashed and compared by identity, and its methods are plain bound methods
    (not Equinox's pytree-bound ones): `jax.jit(trainer.train)` then closes over the trainer,
    whose arrays become constants of the program, and compiles once per trainer, like the
    programs in `programs`.
    """

    env: eqx.AbstractVar[Any]
    config: eqx.AbstractVar[Any]  # a TrainConfig: each trainer declares its family's
    n_updates: eqx.AbstractVar[int]
    eval_every: eqx.AbstractVar[int]
    batch_size: eqx.AbstractVar[int]
    mesh: eqx.AbstractVar[Mesh | None]
    programs: eqx.AbstractVar[Programs]

    __getattribute__ = object.__getattribute__

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    # -- what each trainer defines -------------------------------------------------------
    @abc.abstractmethod
    def init(self, key: Key) -> Any:
        """The state of a run before its first update.

        **Arguments:**

        - `key`: PRNG key of the run.

        **Returns:**

        The trainer's state (policy, optimiser, env states, ...).
        """

    @abc.abstractmethod
    def update(self, state: Any) -> tuple[Any, dict[str, Array]]:
        """One update: collect a batch, then the optimisation steps.

        **Arguments:**

        - `state`: the trainer's state.

        **Returns:**

        `(state, metrics)`, a dict of scalar metrics of the update.
        """

    @abc.abstractmethod
    def result(self, state: Any, metrics: dict[str, Any], checkpoints: Any = None) -> TrainResult:
        """The [`TrainResult`][powerzoojax.rl.algos.TrainResult] of a finished state.

        **Arguments:**

        - `state`: the final state.
        - `metrics`: per-update metrics.
        - `checkpoints`: `((env_steps, params), ...)` kept during the run, or `None`.

        **Returns:**

        A [`TrainResult`][powerzoojax.rl.algos.TrainResult].
        """

    # -- compiled programs ----------------------------------------------------------------
    @property
    def _jit_init(self) -> Callable[[Key], Any]:
        return self.programs.init

    @property
    def _jit_chunk(self) -> Callable[[Any, int], tuple[Any, dict[str, Array]]]:
        return self.programs.chunk

    @property
    def _jit_train(self) -> Callable[[Key], tuple[Any, dict[str, Array]]]:
        return self.programs.train

    def __call__(self, key: Key) -> TrainResult:
        """A whole run from `key` in one compiled call.

        **Arguments:**

        - `key`: PRNG key of the run.

        **Returns:**

        The [`TrainResult`][powerzoojax.rl.algos.TrainResult].
        """
        state, metrics = self._jit_train(self.place_key(key))
        return self.result(state, metrics)

    def state_shardings(self) -> Any:
        """The sharding of every leaf of the training state: `ENV_FIELDS` split along
        their leading (env) axis over the mesh, every other leaf replicated."""
        if self.mesh is None:
            raise ValueError("state_shardings: this trainer has no mesh")
        return self.programs.state_shardings

    # -- placement on a mesh -------------------------------------------------------------
    def place_key(self, key: Key) -> Key:
        """`key` as the compiled functions take it (replicated over the mesh when there is one)."""
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jr.key_data(key)
        if self.mesh is None:
            return key
        return put_global(np.asarray(key), NamedSharding(self.mesh, PartitionSpec()))

    def place_state(self, state: Any) -> Any:
        """A training state held on the host (a loaded checkpoint) laid out as the compiled
        chunk takes it: on the mesh with `state_shardings` when there is one."""
        if self.mesh is None:
            return state
        return put_global(state, self.state_shardings())

    def per_env_shard(self, fn: Callable[[Any, Any], Any], shared: Any, batched: Any) -> Any:
        """`fn(shared, batched)` where every leaf of `batched` and of the output has the env
        axis first. With a mesh, each device runs `fn` on its own slice of the envs
        (`shared` replicated); nothing crosses devices inside."""
        if self.mesh is None:
            return fn(shared, batched)
        spec = PartitionSpec(self.mesh.axis_names[0])
        # check_vma=False: the envs' loops start from constants, which shard_map's
        # varying-axis check rejects although each device computes its own slice only.
        # Typed as any callable: JAX releases before 0.8 type the mapped function by `f`'s
        # first parameter only.
        mapped: Callable[..., Any] = jax.shard_map(
            fn, mesh=self.mesh, in_specs=(PartitionSpec(), spec), out_specs=spec, check_vma=False
        )
        return mapped(shared, batched)

    def split_samples(self, tree: Any, axis: int = 0) -> Any:
        """Ask XLA to split `axis` (a sample axis) of every leaf over the mesh, so each device
        computes the loss and gradient of its share of a minibatch (XLA then all-reduces the
        gradient). A no-op without a mesh or when the axis does not divide evenly."""
        if self.mesh is None:
            return tree
        n_dev = self.mesh.devices.size
        leaves = jax.tree.leaves(tree)
        if not leaves or any(x.ndim <= axis or x.shape[axis] % n_dev for x in leaves):
            return tree
        spec = PartitionSpec(*([None] * axis), self.mesh.axis_names[0])
        return jax.lax.with_sharding_constraint(tree, NamedSharding(self.mesh, spec))

    def maybe_evaluate(
        self, update_index: Array, evaluate: Callable[..., dict[str, Array]], *args: Any, initial: tuple | None = None
    ) -> dict[str, Array]:
        """`evaluate(*args)` every `eval_every` updates and after the last; NaN metrics
        otherwise, so the metrics pytree has one shape on every update.

        `initial`: the same arguments before this update (the policy the update started
        from). On the first update of a run the evaluation scores those instead, so the
        first row's evaluation is the untrained policy (the reference: "eval at start").
        """
        if not self.eval_every:
            return {}
        first = update_index == 0
        due = first | ((update_index + 1) % self.eval_every == 0) | (update_index + 1 == self.n_updates)
        if initial is not None:
            args = jax.tree.map(
                lambda before, after: where(first, before, after) if eqx.is_array(after) else after, initial, args
            )
        return jax.lax.cond(due, lambda: evaluate(*args), lambda: _nan_of_shape(evaluate, *args))

    def eval_episodes(
        self, reset: Callable[[Key], Any], step: Callable[..., Any], act: Callable[[Any], Any], key: Key
    ) -> tuple[Any, ...]:
        """`config.eval_num_episodes` deterministic episodes from reset, in parallel, on
        the one rollout kernel; returns the rollout's stacked outputs (episode axis first)."""
        n = self.config.eval_num_episodes
        k_reset, k_roll = jr.split(key)

        def policy(k, o, _):
            return act(o), ()

        def one_env(k_reset, k):
            o, s = reset(k_reset)
            return rollout(step, k, s, length=self.env.max_steps, policy=policy, init_obs=o)[2]

        def episodes(_, keys):
            return jax.vmap(one_env)(*keys)

        keys = (jr.split(k_reset, n), jr.split(k_roll, n))
        if self.mesh is not None and n % self.mesh.devices.size == 0:
            return self.per_env_shard(episodes, None, keys)
        return episodes(None, keys)

    def run_chunk(self, state: Any, n_updates: int) -> tuple[Any, dict[str, Array]]:
        """`n_updates` updates in one scan; updates past the run's total are skipped (NaN metrics)."""

        def guarded(s, _):
            return jax.lax.cond(
                s.update < self.n_updates, self.update, lambda s_: (s_, _nan_of_shape(lambda x: self.update(x)[1], s_)), s
            )

        return jax.lax.scan(guarded, state, None, length=n_updates)

    def train(self, key: Key) -> tuple[Any, dict[str, Array]]:
        """A whole run from `key`: one scan over all updates (pure; jit and vmap it freely)."""
        state = self.init(key)
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=self.n_updates)
