"""Scalar and key aliases shared by every annotated signature in the project.

jaxtyping shape strings use names (`"n_bus"`) so that beartype checks
consistency between arguments of one call at trace time.
"""

from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray, Shaped

FloatScalar = Float[Array, ""]
IntScalar = Int[Array, ""]
BoolScalar = Bool[Array, ""]
Key = PRNGKeyArray
Info = dict[str, Shaped[Array, "..."]]

__all__ = ["BoolScalar", "FloatScalar", "Info", "IntScalar", "Key"]
