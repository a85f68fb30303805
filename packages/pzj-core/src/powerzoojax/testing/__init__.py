"""Conformance kit: every env in the project must pass both checks."""

from powerzoojax.testing._checks import check_env_api, check_no_retrace

__all__ = ["check_env_api", "check_no_retrace"]
