"""Statistics for noisy evaluations: intervals on rates, paired comparisons, flaky cases.

Pure arithmetic on per-case counts (numpy, scipy): it knows nothing of suites or reports.
"""

from evalspec._stats.flaky import is_flaky, within_variance
from evalspec._stats.intervals import (
    DEFAULT_CONFIDENCE,
    Interval,
    clustered_rate,
    mean_interval,
    wilson,
)
from evalspec._stats.paired import DEFAULT_POWER, PairedResult, paired_compare, sign_flip_p

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_POWER",
    "Interval",
    "PairedResult",
    "clustered_rate",
    "is_flaky",
    "mean_interval",
    "paired_compare",
    "sign_flip_p",
    "wilson",
    "within_variance",
]
