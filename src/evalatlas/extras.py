"""Optional dependencies: import them where used, and say which extra installs them.

``pip install evalatlas`` stays small (storage, metrics, the CLI). Pieces that only some
users need live in extras declared in ``pyproject.toml``:

- ``evalatlas[judge]``: the LLM judge (``openai``) and rubric agreement (``krippendorff``);
- ``evalatlas[bench]``: the runner's BM25 example framework (``bm25s``) and benchmark tools;
- ``evalatlas[eee]``: validating Every Eval Ever exports against the schema (``jsonschema``);
- ``evalatlas[report]``: the HTML report's optional pieces.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from evalatlas.errors import EvalAtlasError


class MissingExtraError(EvalAtlasError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``evalatlas[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] != module.split(".")[0]:
            raise  # the package is there but itself failed to import: show the real error
        raise MissingExtraError(
            f"{purpose} needs the optional package {module.split('.')[0]!r}: "
            f"pip install 'evalatlas[{extra}]'") from exc
