"""How the driver (or an ingress) calls shard copies: one small layer, so the same cluster code talks to Ray actors
(ActorCalls) or to Ray Serve deployment handles (whose `.remote()` gives a DeploymentResponse: a class with the
same methods). A call's result may be passed, unresolved, as an argument of another call: the data then goes
from copy to copy without passing through the caller."""

from __future__ import annotations

import contextlib
from concurrent.futures import Future
from typing import Any, Protocol

from searchengine.errors import SearchEngineError

CALL_TIMEOUT = 60.0
"""Seconds a call to a copy may take before the copy counts as unavailable."""


class CopyCalls(Protocol):
    """Starts calls on copy handles, waits for their results, and gives up on them."""

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401 (a handle, a pending result)
        """Start `method(*args)` on the copy behind `handle`; returns the pending result."""

    def finish(self, pending: Any, timeout: float = CALL_TIMEOUT) -> Any:  # noqa: ANN401
        """The result of a started call; raises what the copy raised, or the transport's error."""

    def timeout(self, method: str) -> float:
        """Seconds a call of `method` may take before its copy counts as failed."""

    def waitable(self, pending: Any) -> Future:  # noqa: ANN401
        """A future that completes with the started call's result (or its error): what a caller waits for when it
        waits for the first of several calls (concurrent.futures.wait)."""

    def cancel(self, pending: Any) -> None:  # noqa: ANN401
        """Give up on a started call, best effort: not sent yet, it never is; running, its copy is asked to stop."""


class ActorCalls:
    """CopyCalls over Ray actor handles."""

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401
        return getattr(handle, method).remote(*args)

    def finish(self, pending: Any, timeout: float = CALL_TIMEOUT) -> Any:  # noqa: ANN401
        import ray

        return ray.get(pending, timeout=timeout)

    def timeout(self, method: str) -> float:  # noqa: ARG002 (every call of an actor has the same)
        return CALL_TIMEOUT

    def waitable(self, pending: Any) -> Future:  # noqa: ANN401
        return pending.future()

    def cancel(self, pending: Any) -> None:  # noqa: ANN401
        import ray

        with contextlib.suppress(Exception):  # finished, or its actor gone: nothing left to stop
            ray.cancel(pending)


def copy_failed(error: BaseException) -> bool:
    """Whether `error` from a call means the copy is unavailable (its process, node or network failed, or it
    timed out), rather than a problem of the request itself, which is raised to the caller."""
    return not isinstance(error, SearchEngineError)


def request_error(error: BaseException) -> BaseException:
    """The error a copy raised for the request itself (a SearchEngineError: a bad filter, bad metadata), as the
    caller would have raised it: Ray delivers it wrapped (a RayTaskError, which is also an instance of the cause's
    class, whose message is the copy's traceback with Ray's header), and its `cause` says it in one line. Any other
    error is returned as it is."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(error, SearchEngineError) and isinstance(cause, SearchEngineError) else error
