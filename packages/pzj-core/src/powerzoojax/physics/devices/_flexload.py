"""Flexible load: curtailment plus load shifting through a ring buffer.

Each device owns a ring of `slots` entries [MW per future step]; the head slot is the
energy that comes back this step. Shifting `s` MW now spreads `s/H` over the next
`H` steps, so every shifted MW·step is paid back exactly once (no loss, no gain).
Shapes: `buffer (..., slots)`, the rest `(...)`; one device or a bundle alike.

The reference's ring has `FLEX_BUFFER_SLOTS` = 64 slots, the largest horizon. Only the `H`
slots from the head are ever non-zero (and `size ≤ H`), so any `slots ≥ H` gives the
same pops, sizes and buffer energies; the bundles allocate `max(H)` slots, which keeps
their per-step work at a few elements per device instead of 64.
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
    """Advance the deferral buffer one step.

    Pop the head → `shift_in` (0 when empty); `curtail = clip(a0, 0, 1)·cap_c`,
    `shift_out = clip(a1, 0, 1)·cap_s`; a positive `shift_out` adds `shift_out/H` to the H
    slots from the new head and sets `size = min(max(size, H), slots)`. The net load
    reduction (injection) is `curtail + shift_out − shift_in`.

    **Arguments:**

    - `buffer`: `(..., slots)` ring buffer of deferred load [MW].
    - `head`, `size`: `(...)` ring-buffer head and occupied length.
    - `a_curtail`, `a_shift`: actions `a0`, `a1`.
    - `cap_curtail_mw`, `cap_shift_mw`: curtailment and shift capacities [MW].
    - `horizon`: steps `H` a shift is spread over, at most `slots`; a Python `int` is
      static.

    **Returns:**

    `(buffer', head', size', curtail_mw, shift_out_mw, shift_in_mw)`.
    """
    slots = buffer.shape[-1]
    # A Python int horizon equal to the ring length (every device shifts over the whole
    # ring) needs no window test: the H slots from the head are all the slots.
    whole_ring = isinstance(horizon, int) and horizon == slots
    head = jnp.asarray(head, jnp.int32)
    size = jnp.asarray(size, jnp.int32)
    horizon = jnp.asarray(horizon, jnp.int32)
    # The slot indices as one row per device (the head's leading axes, explicitly).
    idx = jnp.arange(slots, dtype=jnp.int32).reshape((1,) * head.ndim + (slots,))
    at_head = idx == head[..., None]
    shift_in = jnp.where(size > 0, jnp.sum(jnp.where(at_head, buffer, 0.0), axis=-1), 0.0)
    buffer = jnp.where(at_head, 0.0, buffer)
    head = jnp.where(head + 1 >= slots, 0, head + 1)
    size = jnp.maximum(size - 1, 0)

    curtail = jnp.clip(a_curtail, 0.0, 1.0) * cap_curtail_mw
    shift_out = jnp.clip(a_shift, 0.0, 1.0) * cap_shift_mw
    h = jnp.maximum(horizon, 1)
    shifting = shift_out > 0.0
    add = jnp.where(shifting, shift_out / h.astype(shift_out.dtype), 0.0)[..., None]
    if not whole_ring:
        # Distance of each slot ahead of the new head on the ring, without an integer modulo.
        ahead = idx - head[..., None]
        ahead = jnp.where(ahead < 0, ahead + slots, ahead)
        add = jnp.where(ahead < h[..., None], add, 0.0)
    buffer = buffer + add
    size = jnp.where(shifting, jnp.minimum(jnp.maximum(size, h), slots), size)
    return buffer, head, size, curtail, shift_out, shift_in


def flexload_buffer_energy(buffer: Float[Array, "... slots"]) -> Float[Array, "..."]:
    """Deferred load still owed: the buffer's sum.

    **Arguments:**

    - `buffer`: `(..., slots)` deferred load per future step [MW].

    **Returns:**

    `(...)` [MW·steps].
    """
    return jnp.sum(buffer, axis=-1)
