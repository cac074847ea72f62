"""The two exception types every Noetic failure is raised as.

`NoeticError` carries a machine-readable `.code` — the exact identifier the seeds use
(`"cancelled"`, `"channel_timeout"`, `"INVALID_CUSTOM_ITEM"`, …) — plus structured fields
(`.details`, also readable as attributes: `err.step_id`, `err.channel_name`). Construction and
setup mistakes raise `NoeticConfigError`, a subclass that adds `.hint`: one full sentence saying
what to change. Messages never contain secrets; adapters sanitise provider text before raising.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CONFIG_CODES",
    "RUNTIME_CODES",
    "NoeticConfigError",
    "NoeticError",
    "cancelled",
    "is_noetic_config_error",
    "is_noetic_error",
]

#: Runtime error codes, raised as `NoeticError`.
RUNTIME_CODES = frozenset(
    {
        "step_failed",
        "model_refused",
        "model_parse_error",
        "model_rate_limit",
        "model_error",
        "model_stream_error",
        "fork_partial",
        "channel_timeout",
        "channel_closed",
        "channel_invalid_value",
        "cancelled",
        "budget_exceeded",
        "item_schema_mismatch",
        "steering_denied",
        "handle_evicted",
        "tool_not_found",
        "script_exhausted",
        "INVALID_CUSTOM_ITEM",
        "layer_init_failed",
        "INVALID_LAYER_INPUT",
        "INVALID_LAYER_STATE",
        "EXPRESSION_FAILED",
        "EXPRESSION_LIMIT_EXCEEDED",
        "FILE_NOT_FOUND",
        "FILE_EXISTS",
        "NOT_A_DIRECTORY",
        "IS_A_DIRECTORY",
        "DIRECTORY_NOT_EMPTY",
        "PATH_ESCAPE",
        "FS_ERROR",
        "CHECKPOINT_CORRUPT",
        "CHECKPOINT_STORE_FAILED",
        "EXECUTION_LOCKED",
        "EXECUTION_EXISTS",
        "UNKNOWN_EXECUTION",
        "RESUME_INPUT_REQUIRED",
        "THREAD_BUSY",
        "SESSION_UNPACK_FAILED",
        "LIMIT_EXCEEDED",
        "DECISION_ANSWER_INVALID",
        # noetic-durable-dbos: executions run by worker processes
        "UNKNOWN_AGENT",
        "EXECUTION_FAILED",
        "RESULT_TIMEOUT",
        # noetic-inspector: a write through the inspector's read-only store
        "INSPECTOR_READ_ONLY",
    }
)

#: Construction and setup codes, raised as `NoeticConfigError` (SCREAMING_SNAKE, unique).
CONFIG_CODES = frozenset(
    {
        "MISSING_API_KEY",
        "NO_STEP_CONFIGURED",
        "HARNESS_NOT_STARTED",
        "MISSING_MODEL",
        "EMPTY_STEP_ID",
        "EMPTY_TOOL_NAME",
        "INVALID_STEP",
        "INVALID_TOOL_SCHEMA",
        "INVALID_CHANNEL",
        "INVALID_BUDGET_INPUT",
        "INVALID_LAYER",
        "DUPLICATE_LAYER_ID",
        "INVALID_CONTEXT_CACHE",
        "CHECKPOINT_SCHEMA_MISMATCH",
        "STEP_LEDGER_RETENTION_INVALID",
        "DURABILITY_INVALID",
        "NOT_A_CHECKPOINT_STORE",
        "RESUME_INPUT_STORED",
        "SESSION_POLICY_INVALID",
        "NO_CHECKPOINT_STORE",
        "WORKFLOW_VALIDATION_FAILED",
        "UNKNOWN_NODE_KIND",
        "UNSUPPORTED_NODE_KIND",
        "UNKNOWN_TOOL_REFERENCE",
        "UNKNOWN_LAYER_REFERENCE",
        "UNKNOWN_UNTIL_PREDICATE",
        "UNKNOWN_WORKFLOW_REFERENCE",
        "UNKNOWN_UI_LIBRARY_REFERENCE",
        "WORKFLOW_CYCLE",
        "INVALID_FORK_INPUT",
        "INVALID_WORKFLOW_SOURCE",
        "INVALID_EXPRESSION",
        "INVALID_CUSTOM_ITEM_TYPE",
        "INVALID_CUSTOM_ITEM_OUTPUT",
        "UNKNOWN_CUSTOM_ITEM",
        "CUSTOM_ITEM_MISMATCH",
        "INVALID_ITEM",
        "UNKNOWN_PLUGIN_TARGET",
        "DUPLICATE_REGISTRATION",
        "PLUGIN_LOAD_FAILED",
        "UNKNOWN_MODEL_ADAPTER",
        "UNKNOWN_FILESYSTEM",
        "UNKNOWN_CONTEXT_LAYER",
        "UNKNOWN_CHECKPOINT_STORE",
        "INVALID_FS_ROOT",
        "TURN_NOT_FINISHED",
        "INVALID_INPUT",
        "INVALID_SNAPSHOT",
        "INVALID_ID",
        "INVALID_HARNESS_OPTION",
        "INVALID_WORKFLOW_LIMITS",
        "UNKNOWN_MODEL",
        # noetic-durable-dbos: the throwaway PostgreSQL server of tests and benchmarks
        "POSTGRES_NOT_INSTALLED",
        "POSTGRES_FAILED",
        # harness inspect= / NOETIC_INSPECT, and noetic-inspector's store argument
        "INSPECT_URL_INVALID",
        "INSPECTOR_STORE_MISSING",
    }
)


class NoeticError(Exception):
    """An error raised by the Noetic runtime, identified by `code`.

    `details` holds the structured fields of the error kind (for `fork_partial`: `succeeded`
    and `failed`; for `channel_timeout`: `channel_name` and `timeout`, …); each is also
    readable as an attribute. `cause` is the user exception behind a `step_failed`.
    """

    code: str
    message: str
    details: dict[str, Any]

    def __init__(self, code: str, message: str, *, cause: BaseException | None = None, **details: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause

    @property
    def kind(self) -> str:
        """The TypeScript Noetic's name for `code`."""
        return self.code

    def __getattr__(self, name: str) -> Any:
        details = self.__dict__.get("details")
        if details is not None and name in details:
            return details[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.code, self.message, self.details, getattr(self, "hint", None)))


class NoeticConfigError(NoeticError):
    """A construction or setup error; `hint` is one full sentence saying what to change."""

    hint: str

    def __init__(self, code: str, message: str, *, hint: str, docs_url: str | None = None, **details: Any):
        super().__init__(code, message, **details)
        self.hint = hint
        self.docs_url = docs_url

    def __str__(self) -> str:
        return f"[{self.code}] {self.message} Hint: {self.hint}"


def _rebuild(
    cls: type[NoeticError], code: str, message: str, details: dict[str, Any], hint: str | None
) -> NoeticError:
    if issubclass(cls, NoeticConfigError):
        return cls(code, message, hint=hint or "", **details)
    return cls(code, message, **details)


def cancelled(reason: str | None) -> NoeticError:
    """The `cancelled` error raised when an aborted context's work is cut short."""
    suffix = f": {reason}" if reason else ""
    return NoeticError("cancelled", f"the execution was cancelled{suffix}", reason=reason)


def is_noetic_error(value: object) -> bool:
    """True for a `NoeticError` (or an object shaped like one, with a string `code`)."""
    return isinstance(value, NoeticError) or (
        isinstance(value, BaseException) and isinstance(getattr(value, "code", None), str)
    )


def is_noetic_config_error(value: object) -> bool:
    """True for a `NoeticConfigError`."""
    return isinstance(value, NoeticConfigError)
