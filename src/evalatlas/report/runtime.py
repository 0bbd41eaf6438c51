"""The Vega / Vega-Lite / Vega-Embed runtime that the HTML report inlines.

The runtime comes from ``vl-convert-python`` (the ``[report]`` extra), which ships the
three libraries and their dependencies as one JavaScript bundle
(:func:`vl_convert.javascript_bundle`). Building that bundle takes 3-12 s per process, so
it is built once per vl-convert version and kept in a cache file
(``$EVALATLAS_CACHE_DIR``, else ``$XDG_CACHE_HOME/evalatlas``, else ``~/.cache/evalatlas``).

The bundle is written for ``<script type="module">`` and declares many top-level
``const``s (``n``, ``t`` ...). Inlined as a classic script they would become globals and
clash with the page's own script, so :func:`wrapped_runtime` puts it inside a function;
the bundle's default snippet only assigns ``window.vegaEmbed``, ``window.vega`` and
``window.vegaLite``. The bundle must not contain ``</script`` or ``<!--`` (they would end
or confuse the inline ``<script>`` element); that is checked, not patched, because
rewriting minified code could change what it does.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from evalatlas import safe_write
from evalatlas.errors import EvalAtlasError

_UNSAFE = re.compile(r"</script|<!--|<script", re.IGNORECASE)


class RuntimeUnavailable(EvalAtlasError):
    """The report's JavaScript runtime cannot be built (the ``[report]`` extra is missing)."""


def cache_dir() -> Path:
    """Where the built bundle is kept (see the module docstring)."""
    env = os.environ.get("EVALATLAS_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "evalatlas"


def _vl_convert():
    try:
        import vl_convert
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise RuntimeUnavailable(
            "the HTML report needs vl-convert-python: pip install 'evalatlas[report]'"
        ) from exc
    return vl_convert


def runtime_version() -> str:
    """vl-convert's version and the Vega-Lite version it bundles (the cache key)."""
    vlc = _vl_convert()
    parts = [getattr(vlc, "__version__", "unknown")]
    for name, getter in (("vega", "get_vega_version"), ("embed", "get_vega_embed_version")):
        fn = getattr(vlc, getter, None)
        if fn is not None:
            parts.append(f"{name}{fn()}")
    return "-".join(parts)


def javascript_bundle() -> str:
    """The raw bundle, from the cache file or built (and cached) by vl-convert."""
    version = re.sub(r"[^A-Za-z0-9._-]", "_", runtime_version())
    path = cache_dir() / f"vega-runtime-{version}.js"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    bundle = _vl_convert().javascript_bundle()
    if _UNSAFE.search(bundle):
        raise RuntimeUnavailable("the vl-convert bundle contains '</script' or '<!--' and "
                                 "cannot be inlined safely")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        safe_write.write_text(path, bundle)  # whole: concurrent reports never read half
    except OSError:  # OutputError too: an unwritable cache only costs time
        pass
    return bundle


def wrapped_runtime() -> str:
    """The bundle inside a function scope, safe to inline as a classic ``<script>``."""
    return ("/* Vega, Vega-Lite and Vega-Embed (BSD-3-Clause), bundled by vl-convert "
            f"{runtime_version()} */\n(function(){{\n{javascript_bundle()}\n}}).call(window);\n")
