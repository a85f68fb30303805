"""Flexible load: curtailment plus load shifting through a ring buffer (spec §4.5).

Each device owns ``FLEX_BUFFER_SLOTS`` slots [MW per future step]; the head slot is the
energy that comes back this step. Shifting ``s`` MW now spreads ``s/H`` over the next
``H`` steps, so every shifted MW·step is paid back exactly once (no loss, no gain).
Shapes: ``buffer (..., 64)``, the rest ``(...)``; one device or a bundle alike.
"""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

FLEX_BUFFER_SLOTS = 64


def flexload_step(
    buffer: Float[Array, "... slots"],
    head: Int[Array, "..."],
    size: Int[Array, "..."],
    a_curtail: Float[ArrayLike, "..."],
    a_shift: Float[ArrayLike, "..."],
    cap_curtail_mw: Float[ArrayLike, "..."],
    cap_shift_mw: Float[ArrayLike, "..."],
    horizon: Int[ArrayLike, "..."],
) -> tuple[
    Float[Array, "... slots"],
    Int[Array, "..."],
    Int[Array, "..."],
    Float[Array, "..."],
    Float[Array, "..."],
    Float[Array, "..."],
]:
    """Advance the buffer one step.

    Returns ``(buffer', head', size', curtail_mw, shift_out_mw, shift_in_mw)``:
    pop the head → ``shift_in`` (0 when empty); ``curtail = clip(a0, 0, 1)·cap_c``,
    ``shift_out = clip(a1, 0, 1)·cap_s``; a positive ``shift_out`` adds ``shift_out/H`` to
    the H slots from the new head and sets ``size = min(max(size, H), 64)``. The net
    load reduction (injection) is ``curtail + shift_out − shift_in``.
    """
    slots = buffer.shape[-1]
    head = jnp.asarray(head, jnp.int32)
    size = jnp.asarray(size, jnp.int32)
    horizon = jnp.asarray(horizon, jnp.int32)
    idx = jnp.arange(slots, dtype=jnp.int32)
    at_head = idx == head[..., None]
    shift_in = jnp.where(size > 0, jnp.sum(jnp.where(at_head, buffer, 0.0), axis=-1), 0.0)
    buffer = jnp.where(at_head, 0.0, buffer)
    head = (head + 1) % slots
    size = jnp.maximum(size - 1, 0)

    curtail = jnp.clip(a_curtail, 0.0, 1.0) * cap_curtail_mw
    shift_out = jnp.clip(a_shift, 0.0, 1.0) * cap_shift_mw
    h = jnp.maximum(horizon, 1)
    in_window = ((idx - head[..., None]) % slots) < h[..., None]
    add = jnp.where(in_window, (shift_out / h)[..., None], 0.0)
    shifting = shift_out > 0.0
    buffer = buffer + jnp.where(shifting[..., None], add, 0.0)
    size = jnp.where(shifting, jnp.minimum(jnp.maximum(size, h), slots), size)
    return buffer, head, size, curtail, shift_out, shift_in


def flexload_buffer_energy(buffer: Float[Array, "... slots"]) -> Float[Array, "..."]:
    """Deferred load still owed [MW·steps]: the buffer's sum."""
    return jnp.sum(buffer, axis=-1)
