"""The core's loggers, looked up on their first message so that `import noetic` skips `logging`.

The core only logs on unusual paths (a failed layer hook, a full subscription, a dropped
setting), and importing `logging` (with `traceback`) is a noticeable share of the import. The
standard library has no lazy logger, hence this small proxy: `logger(name)` stands for
`logging.getLogger(name)` and forwards every attribute to it, importing `logging` the first time.
Handlers and levels configured by the application apply as usual: the real logger is the one
`logging.getLogger(name)` returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

__all__ = ["logger"]


class _Deferred:
    """Forwards attribute lookups to `logging.getLogger(name)`, resolved on first use."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str):
        self._name = name
        self._logger: logging.Logger | None = None

    def __getattr__(self, attribute: str) -> Any:
        found = self._logger
        if found is None:
            import logging

            found = self._logger = logging.getLogger(self._name)
        return getattr(found, attribute)


def logger(name: str) -> logging.Logger:
    """The logger `name`, as `logging.getLogger(name)` would return, imported on first use."""
    return cast("logging.Logger", _Deferred(name))
