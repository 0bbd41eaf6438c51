"""Static code quality (radon + ast) of framework implementations; never runs the code."""

from evalatlas.codequality.static import (
    FRAMEWORK_PREFIXES,
    analyse_source,
    combine,
    maintainability_grade,
)
from evalatlas.codequality.tree import CodeQualityResult, analyse_file, analyse_path

__all__ = [
    "FRAMEWORK_PREFIXES",
    "CodeQualityResult",
    "analyse_file",
    "analyse_path",
    "analyse_source",
    "combine",
    "maintainability_grade",
]
