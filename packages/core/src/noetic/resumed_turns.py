"""A resumed execution and its thread's history: nothing the thread said since is lost (TH-1).

`harness.resume(execution_id)` runs the execution on its own stored log — the thread's history
as it stood when the execution started, plus what the execution added (RS-14) — so its steps
see what they saw before. The thread itself may have moved on since: a later turn ran on it
(in this harness, or in another one whose record this harness read back). Making the
execution's log the thread's history would silently drop those turns, so:

- when the thread's log is the execution's own — the execution's turn was the last to run on
  it, and a resume of it took its log — the execution's log becomes the thread's history, as
  it always did: the items the failed attempt appended after its last checkpoint are dropped,
  since the resumed step appends them again;
- when the thread's log holds other executions' turns (one ran since, or an earlier resume
  of this one kept them), the thread moved on: it keeps its own log, and when the resumed turn
  ends (completed, failed or aborted) the execution's own items — those from its start on —
  that the thread's log does not hold yet (by item id) are appended to it, in the order the
  execution has them. Items the thread already holds (the failed turn's input and replies,
  when it ran in this harness) are not repeated, and resuming the same execution again
  appends only what is new.

Whose log the thread's log is, is kept by the session and written in the thread's stored
record. A thread whose log is a prefix of the execution's (by item id) has nothing to lose and
takes the execution's log whatever the record says (a record that lags behind a process that
was killed mid-turn, say); a record that names no execution (an older one) counts as mixed.

Refusing such a resume instead was considered and rejected: "a turn failed, the user said
something else, then the failed turn is retried" is the ordinary way to recover, and a refusal
would leave the failed turn's work stranded in its checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence

from noetic.items import Item, ItemLog

__all__ = ["catch_up", "thread_moved_on"]


def thread_moved_on(
    thread_log: ItemLog, execution_log: ItemLog, execution_id: str, log_execution: str | None
) -> bool:
    """Whether the thread moved on since the resumed execution (`execution_id`, whose log is
    `execution_log`) started: its log is not a prefix of the execution's (by item id) and is not
    that execution's own either (`log_execution`: the execution whose log the thread's log
    is, None when unknown or mixed). Then the thread keeps its log, and `catch_up` runs when
    the turn ends."""
    if thread_log is execution_log:
        return False
    theirs = execution_log.items
    if len(thread_log) <= len(theirs) and all(
        item.id == theirs[i].id for i, item in enumerate(thread_log.items)
    ):
        return False  # nothing to lose (a stored record that lags behind the execution, say)
    return log_execution != execution_id


def catch_up(thread_log: ItemLog, own_items: Sequence[Item]) -> int:
    """Append to the thread's log, in order, the execution's own items it lacks (by id);
    returns how many were appended. No listener hears them: the turn has ended."""
    return sum(thread_log.append_quietly(item) for item in own_items)
