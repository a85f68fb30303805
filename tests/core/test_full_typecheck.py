"""The test run's typechecker checks every item of a container, not one at random.

pyproject's `--jaxtyping-packages` names `full_typecheck.typechecker` (tests/full_typecheck.py)
for `powerzoojax`; beartype alone checks one random item of a container per call.
"""

from typing import Any

import pytest
from full_typecheck import ContainerItemViolation, typechecker
from jaxtyping import TypeCheckError, jaxtyped


@pytest.mark.parametrize("position", [0, 117, 199])
def test_a_library_function_rejects_one_bad_item_among_many(position):
    # fuel_type_code reads any item through str(), so only the type check can reject it:
    # one random item of 200 would catch the int once in 200 calls.
    from powerzoojax.case import FUEL_TYPES, fuel_type_code

    names: list[Any] = ["coal"] * 200
    assert fuel_type_code(names).tolist() == [FUEL_TYPES["coal"]] * 200
    names[position] = 7
    with pytest.raises(TypeCheckError, match="names"):
        fuel_type_code(names)


def test_items_deep_inside_nested_containers_are_checked():
    @jaxtyped(typechecker=typechecker)
    def total(table: dict[str, list[tuple[int, float]]]) -> float:
        return float(sum(v for rows in table.values() for _, v in rows))

    table: dict[str, list[Any]] = {f"k{i}": [(j, 1.0) for j in range(30)] for i in range(30)}
    assert total(table) == 900.0
    table["k17"][23] = (23, "1.0")
    with pytest.raises(TypeCheckError, match="table"):
        total(table)


def test_star_arguments_and_return_values_are_checked_item_by_item():
    @jaxtyped(typechecker=typechecker)
    def flat(*rows: list[int]) -> list[int]:
        return [x for row in rows for x in row]

    assert flat([1, 2], [3]) == [1, 2, 3]
    bad: list[Any] = [0] * 40 + ["x"]
    with pytest.raises(TypeCheckError, match="rows"):
        flat([1, 2], bad)

    @jaxtyped(typechecker=typechecker)
    def halves(n: int) -> list[int]:
        rows: list[Any] = [i // 2 for i in range(n)]
        return rows + [0.5]

    with pytest.raises(TypeCheckError, match="return"):
        halves(60)


def test_the_wrapper_names_the_bad_item():
    @typechecker
    def flat(*rows: list[int]) -> list[int]:
        return [x for row in rows for x in row]

    bad: list[Any] = [0] * 40 + ["x"]
    with pytest.raises(ContainerItemViolation, match=r"parameter 'rows'\[1\]\[40\]: 'x' is not"):
        flat([1, 2], bad)

    @typechecker
    def halves(n: int) -> list[int]:
        rows: list[Any] = [i // 2 for i in range(n)]
        return rows + [0.5]

    with pytest.raises(ContainerItemViolation, match=r"return\[60\]: 0.5 is not"):
        halves(60)
