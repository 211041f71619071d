"""pandas, imported on first use.

The statistics run on NumPy codes; pandas serves the DataFrame inputs and outputs. Importing
it costs about a third of a second, more than `annotate agree` spends on 100k items, so a
caller that builds its matrices from codes never pays for it.
"""

from __future__ import annotations

import sys
from typing import Any


class _Pandas:
    def __getattr__(self, name: str) -> Any:
        import pandas

        return getattr(pandas, name)


pd: Any = _Pandas()


def is_pandas(value: Any, kind: str) -> bool:
    """``isinstance(value, pandas.<kind>)``, without importing pandas: nothing is a pandas
    object before pandas has been imported."""
    module = sys.modules.get("pandas")
    return module is not None and isinstance(value, getattr(module, kind))
