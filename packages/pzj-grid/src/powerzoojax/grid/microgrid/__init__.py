"""Data-centre microgrids: [`DataCenterEnv`][powerzoojax.grid.microgrid.DataCenterEnv] (GPU task queue and scheduler),
[`DataCenterMicrogridEnv`][powerzoojax.grid.microgrid.DataCenterMicrogridEnv] (the data centre behind a PV, battery and diesel microgrid),
its real-profile params and out-of-distribution transforms, and
[`DCMicrogridShapingWrapper`][powerzoojax.grid.microgrid.DCMicrogridShapingWrapper] (diesel auto-balance and reward shaping)."""

from powerzoojax.grid.microgrid._datacenter import (
    DATACENTER_CONSTRAINT_NAMES,
    DataCenterEnv,
    DataCenterParams,
    DataCenterState,
    make_datacenter_params,
)
from powerzoojax.grid.microgrid._dc_microgrid import (
    DCMG_CONSTRAINT_NAMES,
    DataCenterMicrogridEnv,
    DCMicrogridParams,
    DCMicrogridState,
    make_dcmicrogrid_params,
)
from powerzoojax.grid.microgrid._profiles import (
    OOD_SCENARIOS,
    apply_ood_transform,
    make_dcmicrogrid_params_with_profiles,
)
from powerzoojax.grid.microgrid._shaping import DCMicrogridShapingWrapper

__all__ = [
    "DATACENTER_CONSTRAINT_NAMES", "DCMG_CONSTRAINT_NAMES", "DCMicrogridParams", "DCMicrogridShapingWrapper",
    "DCMicrogridState", "DataCenterEnv", "DataCenterMicrogridEnv", "DataCenterParams", "DataCenterState",
    "OOD_SCENARIOS", "apply_ood_transform", "make_datacenter_params", "make_dcmicrogrid_params",
    "make_dcmicrogrid_params_with_profiles",
]
