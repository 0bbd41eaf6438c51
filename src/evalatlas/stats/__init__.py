"""Uncertainty: standard errors, intervals, bootstrap, paired tests, Holm, power, one-sided
non-inferiority tests and an anytime-valid sequential test (the CI gate).

Pure functions, arrays in, numbers out; formulas and sources in each docstring.
"""

from evalatlas.stats.bootstrap import bootstrap_ci
from evalatlas.stats.bounded import (
    BoundedInterval,
    bounded_mean_interval,
    nonnegative_mean_interval,
)
from evalatlas.stats.intervals import wilson_interval
from evalatlas.stats.noninferiority import (
    detectable_drop,
    mcnemar_drop_power,
    mcnemar_drop_pvalue,
    sign_flip_drop_pvalue,
    tasks_for_drop,
)
from evalatlas.stats.paired import (
    McNemarResult,
    PairedDifference,
    holm_adjust,
    mcnemar_test,
    paired_difference,
)
from evalatlas.stats.power import minimum_detectable_difference, tasks_needed
from evalatlas.stats.sequential import SequentialDrop, sequential_drop_test
from evalatlas.stats.standard_errors import (
    Interval,
    clustered_standard_error,
    mean_with_interval,
    standard_error_clt,
    trial_standard_error,
)

__all__ = [
    "BoundedInterval",
    "Interval",
    "McNemarResult",
    "PairedDifference",
    "SequentialDrop",
    "bootstrap_ci",
    "bounded_mean_interval",
    "clustered_standard_error",
    "detectable_drop",
    "holm_adjust",
    "mcnemar_drop_power",
    "mcnemar_drop_pvalue",
    "mcnemar_test",
    "mean_with_interval",
    "minimum_detectable_difference",
    "nonnegative_mean_interval",
    "paired_difference",
    "sequential_drop_test",
    "sign_flip_drop_pvalue",
    "standard_error_clt",
    "tasks_for_drop",
    "tasks_needed",
    "trial_standard_error",
    "wilson_interval",
]
