"""Equinox policies: a Gaussian or Beta actor and a critic with one reward and `k` cost heads."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, Float
from powerzoojax.core._types import Key


_ACTIVATIONS = {"tanh": jnp.tanh, "swish": jax.nn.swish}


class MLP(eqx.Module):
    """MLP (tanh or swish hidden activations) with arbitrary hidden widths and a linear output
    layer.

    **Arguments:**

    - `in_size`, `out_size`: input and output widths.
    - `hidden_dims`: hidden widths.
    - `key`: PRNG key of the initialisation.
    - `out_scale`: scale of the output layer's initial weights.
    - `final_activation`: also apply the activation to the output.
    - `activation`: `"tanh"` or `"swish"`.
    """

    layers: tuple[eqx.nn.Linear, ...]
    final_activation: bool = eqx.field(static=True)
    activation: str = eqx.field(static=True, default="tanh")

    def __init__(
        self,
        in_size: int,
        out_size: int,
        hidden_dims: tuple[int, ...],
        key: Key,
        out_scale: float = 1.0,
        final_activation: bool = False,
        activation: str = "tanh",
    ):
        sizes = (in_size, *hidden_dims, out_size)
        keys = jr.split(key, len(sizes) - 1)
        layers = [eqx.nn.Linear(a, b, key=k) for a, b, k in zip(sizes[:-1], sizes[1:], keys)]
        if not final_activation:
            # A small last layer starts the actor near the action-space centre (standard PPO init).
            layers[-1] = _linear(sizes[-2], sizes[-1], keys[-1], out_scale)
        self.layers = tuple(layers)
        self.final_activation = final_activation
        self.activation = activation

    def __call__(self, x: Float[Array, " in_size"]) -> Float[Array, " out_size"]:
        act = _ACTIVATIONS[self.activation]
        for layer in self.layers[:-1]:
            x = act(layer(x))
        x = self.layers[-1](x)
        return act(x) if self.final_activation else x


class ActorCritic(eqx.Module):
    """Gaussian policy (state-independent `log_std`) and a critic of `1 + n_costs` values.

    `values[0]` estimates the reward return, `values[1:]` the cost returns.

    **Arguments:**

    - `obs_dim`, `action_dim`: observation and action widths.
    - `hidden_dims`: hidden widths.
    - `key`: PRNG key of the initialisation.
    - `n_costs`: cost-value heads.
    - `log_std_init`: initial log standard deviation.
    - `shared`: one tanh torso feeds a linear mean head and a linear value head, which
      halves the cost of every forward/backward pass; `False` builds separate actor and
      critic MLPs.
    """

    torso: MLP | None
    actor: MLP | eqx.nn.Linear
    critic: MLP | eqx.nn.Linear
    log_std: Float[Array, " action_dim"]

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden_dims: tuple[int, ...],
        key: Key,
        n_costs: int = 0,
        log_std_init: float = -0.5,
        shared: bool = True,
    ):
        k_torso, k_actor, k_critic = jr.split(key, 3)
        if shared:
            self.torso = MLP(obs_dim, hidden_dims[-1], hidden_dims[:-1], k_torso, final_activation=True)
            self.actor = _linear(hidden_dims[-1], action_dim, k_actor, scale=0.01)
            self.critic = _linear(hidden_dims[-1], 1 + n_costs, k_critic, scale=1.0)
        else:
            self.torso = None
            self.actor = MLP(obs_dim, action_dim, hidden_dims, k_actor, out_scale=0.01)
            self.critic = MLP(obs_dim, 1 + n_costs, hidden_dims, k_critic)
        self.log_std = jnp.full((action_dim,), log_std_init, jnp.float32)

    def features(self, obs: Float[Array, " obs_dim"]) -> Float[Array, " n_features"]:
        """The torso's features of `obs` (the observation itself without a shared torso).

        **Arguments:**

        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        A `(n_features,)` array.
        """
        return obs if self.torso is None else self.torso(obs)

    def mean_action(self, obs: Float[Array, " obs_dim"]) -> Float[Array, " action_dim"]:
        """The Gaussian's mean.

        **Arguments:**

        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        An `(action_dim,)` array (unclipped).
        """
        return self.actor(self.features(obs))

    def value(self, obs: Float[Array, " obs_dim"]) -> Float[Array, " n_values"]:
        """The critic's values.

        **Arguments:**

        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        `(1 + n_costs,)`: reward value, then one value per cost.
        """
        return self.critic(self.features(obs))

    def __call__(
        self, obs: Float[Array, " obs_dim"]
    ) -> tuple[Float[Array, " action_dim"], Float[Array, " action_dim"], Float[Array, " n_values"]]:
        x = self.features(obs)
        return self.actor(x), self.log_std, self.critic(x)


BETA_MAX = 20.0


class BetaActorCritic(eqx.Module):
    """Beta policy for bounded actions.

    A swish torso, `α, β = 1 + softplus(·)` clipped to `BETA_MAX`, so the density is
    unimodal on `[0, 1]`; the sample `x` maps affinely onto the action box (`u = 2x − 1`
    in `[-1, 1]`, then the box). Same critic heads as
    [`ActorCritic`][powerzoojax.rl.algos.ActorCritic].

    **Arguments:**

    - `obs_dim`, `action_dim`: observation and action widths.
    - `hidden_dims`: hidden widths.
    - `key`: PRNG key of the initialisation.
    - `n_costs`: cost-value heads.
    """

    torso: MLP
    actor: eqx.nn.Linear
    critic: eqx.nn.Linear

    def __init__(self, obs_dim: int, action_dim: int, hidden_dims: tuple[int, ...], key: Key, n_costs: int = 0):
        k_torso, k_actor, k_critic = jr.split(key, 3)
        self.torso = MLP(obs_dim, hidden_dims[-1], hidden_dims[:-1], k_torso, final_activation=True, activation="swish")
        # Small initial outputs: α ≈ β ≈ 1 + log 2, a broad hump centred in the box.
        self.actor = _linear(hidden_dims[-1], 2 * action_dim, k_actor, scale=0.01)
        self.critic = _linear(hidden_dims[-1], 1 + n_costs, k_critic, scale=1.0)

    def concentrations(self, x: Float[Array, " n_features"]) -> tuple[Float[Array, " action_dim"], Float[Array, " action_dim"]]:
        """The Beta concentrations of torso features.

        **Arguments:**

        - `x`: `(n_features,)` torso features.

        **Returns:**

        `(alpha, beta)`, each `(action_dim,)`.
        """
        raw = self.actor(x)
        ab = jnp.minimum(1.0 + jax.nn.softplus(raw), BETA_MAX)
        half = raw.shape[0] // 2
        return ab[:half], ab[half:]

    def mean_action(self, obs: Float[Array, " obs_dim"]) -> Float[Array, " action_dim"]:
        """The mode `(α − 1)/(α + β − 2)` (the mean where the mode is undefined, `α = β = 1`),
        as `u = 2x − 1`.

        **Arguments:**

        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        An `(action_dim,)` array in [-1, 1].
        """
        alpha, beta = self.concentrations(self.torso(obs))
        return 2.0 * beta_mode(alpha, beta) - 1.0

    def value(self, obs: Float[Array, " obs_dim"]) -> Float[Array, " n_values"]:
        """The critic's values.

        **Arguments:**

        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        `(1 + n_costs,)`: reward value, then one value per cost.
        """
        return self.critic(self.torso(obs))

    def __call__(
        self, obs: Float[Array, " obs_dim"]
    ) -> tuple[Float[Array, " action_dim"], Float[Array, " action_dim"], Float[Array, " n_values"]]:
        """`(α, β, values)`."""
        x = self.torso(obs)
        alpha, beta = self.concentrations(x)
        return alpha, beta, self.critic(x)


_BETA_EPS = 1e-6


def beta_sample(key: Key, alpha: Float[Array, "*batch"], beta: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
    """A Beta draw kept off the end points, where the log-density is infinite for α or β > 1."""
    return jnp.clip(jr.beta(key, alpha, beta), _BETA_EPS, 1.0 - _BETA_EPS)


def beta_log_prob(
    x: Float[Array, "*batch action_dim"], alpha: Float[Array, "*batch action_dim"], beta: Float[Array, "*batch action_dim"]
) -> Float[Array, "*batch"]:
    """Log-density of independent Betas on `[0, 1]`, summed over the action dimensions."""
    x = jnp.clip(x, _BETA_EPS, 1.0 - _BETA_EPS)
    logp = (alpha - 1.0) * jnp.log(x) + (beta - 1.0) * jnp.log1p(-x) - jax.scipy.special.betaln(alpha, beta)
    return jnp.sum(logp, axis=-1)


def beta_entropy(alpha: Float[Array, "*batch action_dim"], beta: Float[Array, "*batch action_dim"]) -> Float[Array, "*batch"]:
    """Differential entropy of independent Betas, summed over the action dimensions."""
    dg = jax.scipy.special.digamma
    h = (
        jax.scipy.special.betaln(alpha, beta) - (alpha - 1.0) * dg(alpha) - (beta - 1.0) * dg(beta)
        + (alpha + beta - 2.0) * dg(alpha + beta)
    )
    return jnp.sum(h, axis=-1)


def beta_mode(alpha: Float[Array, "*batch"], beta: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
    denom = alpha + beta - 2.0
    safe = jnp.where(denom > 1e-6, denom, 1.0)
    return jnp.where(denom > 1e-6, (alpha - 1.0) / safe, alpha / (alpha + beta))


def _linear(in_size: int, out_size: int, key: Key, scale: float) -> eqx.nn.Linear:
    layer = eqx.nn.Linear(in_size, out_size, key=key)
    return eqx.tree_at(lambda l: (l.weight, l.bias), layer, (layer.weight * scale, jnp.zeros_like(layer.bias)))  # pyright: ignore[reportArgumentType]


def gaussian_log_prob(
    x: Float[Array, "*batch action_dim"], mean: Float[Array, "*batch action_dim"], log_std: Float[Array, "*#batch action_dim"]
) -> Float[Array, "*batch"]:
    """Log-density of a diagonal Gaussian, summed over the action dimensions."""
    z = (x - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z * z - log_std - 0.5 * math.log(2.0 * math.pi), axis=-1)


def gaussian_entropy(log_std: Float[Array, " action_dim"]) -> Float[Array, ""]:
    return jnp.sum(log_std + 0.5 * math.log(2.0 * math.pi * math.e))


def count_params(model: eqx.Module) -> int:
    return sum(x.size for x in jax.tree.leaves(eqx.filter(model, eqx.is_array)))
