"""Jitted entry points of the iterative solvers, so that eager calls reuse one program.

Called outside `jit` (an env stepped eagerly, a notebook), JAX runs a function op by op
and compiles every `while_loop` / `fori_loop` / `custom_vmap` it meets, keyed on the
identity of the loop's body. The solvers build their bodies as closures on every call, so
each eager solve would compile its loops again, on every step (`benchmarks/eager_step.py`,
`benchmarks/results/history.md`). Wrapped in `jax.jit`, an eager call compiles once per
shape and options. Inside an outer `jit` or `vmap` the wrapper
is inlined, so the compiled program is the same. Arguments annotated as Python values
(options that pick a code path, loop bounds, the OPFs' `tol`) are static; arguments that
may be arrays stay traced.
"""

import functools

import jax


def solver_entry(*, static_argnames: tuple[str, ...]):
    """`jax.jit` with `static_argnames`, keeping the wrapped function's name and docs."""
    return functools.partial(jax.jit, static_argnames=static_argnames)
