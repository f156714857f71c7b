"""ShardRounds: the part of ClusterIndex (cluster_index.py) that asks one copy of every shard a read (a round of a
search, a lookup) and waits for their answers, hedged: a copy that fails is marked not serving and the shard's next
copy is asked; a copy that is late (past its shard's hedge delay, call_latencies.py) is not waited for alone: the
shard's next copy is asked too, the first answer is kept and the other call cancelled (Dean and Barroso, "The Tail
at Scale"). A copy whose node was lost thus costs a search its shard's hedge delay, not the call's timeout: a Serve
call to a lost node's copy never fails by itself (copy_deployments.ServeCalls says why)."""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from dataclasses import dataclass
from typing import Any

from searchengine.cluster.call_latencies import CallLatencies
from searchengine.cluster.copy_calls import CopyCalls, copy_failed, request_error
from searchengine.cluster.copy_upkeep import CopyState
from searchengine.cluster.query_spans import SearchSpan
from searchengine.indexer.errors import FieldKindError, UnknownFieldError

LOCAL_REFUSALS = (UnknownFieldError, FieldKindError)
"""A shard's refusals of a filter that depend on its own documents (a field none has, values of another kind): one
index of every shard's documents may take the filter, so such a shard matches nothing rather than refuse."""

NOT_FILTERED = object()
"""`_round`'s `unknown_field_answer` for a read that takes no filter: a refusal is raised as it comes."""
SERVING_CHECK_S = 0.1
"""Seconds between two looks, while a round waits for a copy, at whether the copy still serves: once heal finds its
node gone (Ray declared it dead), or another search's call to it failed, the round asks the shard's next copy at
once, or with no copy left leaves the shard out of a partial answer, instead of waiting on."""


@dataclass
class CopyCall:
    """One call of a round: to the copy at `position` in its shard's order, started at `started` (perf_counter);
    `answered`: when its result came (set by the waitable's callback), `hedged`: whether the next copy was asked
    because it was late."""

    shard: int
    position: int
    pending: Any
    started: float
    answered: float = 0.0
    hedged: bool = False


class ShardRounds:
    """Rounds of reads over the shards' copies; ClusterIndex inherits it and sets these attributes."""

    copies: list[list[CopyState]]
    calls: CopyCalls
    latencies: CallLatencies
    _turn: int

    def _copy_order(self) -> dict[int, list[CopyState]]:
        """Each shard's serving copies in the order to ask them: turn by turn, so searches spread over copies."""
        self._turn += 1
        order = {}
        for shard, states in enumerate(self.copies):
            serving = [state for state in states if state.serving and state.handle is not None]
            if serving:
                turn = self._turn % len(serving)
                order[shard] = serving[turn:] + serving[:turn]
        return order

    @staticmethod
    def _prefer(
        order: dict[int, list[CopyState]], answered: dict[int, tuple[CopyState, Any]]
    ) -> dict[int, list[CopyState]]:
        """`order` with the copy that answered the last round first, so one search reads one snapshot per shard
        where it can."""
        preferred = {}
        for shard, states in order.items():
            if shard in answered:
                first = answered[shard][0]
                preferred[shard] = [first] + [state for state in states if state is not first]
        return preferred

    def _round(
        self,
        order: dict[int, list[CopyState]],
        method: str,
        *args: Any,  # noqa: ANN401
        per_shard: dict[int, Any] | None = None,
        span: SearchSpan | None = None,
        unknown_field_answer: Any = NOT_FILTERED,  # noqa: ANN401
    ) -> dict[int, tuple[CopyState, Any]]:
        """Ask one copy of every shard in `order` the read `method(*args)` (or `method(per_shard[shard])`), all at
        once, hedged and failing over as the module says. Returns (copy, result) by shard, for the shards that
        answered; the wait and the calls are counted in `span`. Reads only: a call may reach two copies.
        `unknown_field_answer`: for a read filtered by `where`, what a shard that refuses it for a field none of its
        documents has, or whose values are all of another kind (LOCAL_REFUSALS), answers instead (matching nothing),
        as one index of every shard's documents would answer; raised only when every shard that answered refused it
        (a kind refusal first: some shard has the field)."""
        pending = self._start_round(order, method, *args, per_shard=per_shard, span=span)
        return self._finish_round(
            order, pending, method, *args, per_shard=per_shard, span=span, unknown_field_answer=unknown_field_answer
        )

    def _start_round(
        self,
        order: dict[int, list[CopyState]],
        method: str,
        *args: Any,  # noqa: ANN401
        per_shard: dict[int, Any] | None = None,
        span: SearchSpan | None = None,
    ) -> dict[int, CopyCall]:
        """`_round`'s calls to the first copy of every shard, started (the caller may work while they run); the
        time taken to start them is counted in `span`."""
        since = time.perf_counter()
        started = {}
        for shard, states in order.items():
            for position in range(len(states)):  # the first that still serves (heal may have stopped one since)
                call = self._call(order, shard, position, method, args, per_shard)
                if call is not None:
                    started[shard] = call
                    break
        if span is not None:
            span.starting(since)
        return started

    def _call(
        self,
        order: dict[int, list[CopyState]],
        shard: int,
        position: int,
        method: str,
        args: tuple[Any, ...],
        per_shard: dict[int, Any] | None,
    ) -> CopyCall | None:
        """The call of `method` to the copy at `position` in its shard's order, started; None when that copy no
        longer serves, or has no handle, since the order was made. Heal stops a copy serving before it takes its
        handle (a lost node's copy, rebuilt elsewhere) or gives it a new one (a copy started, not caught up yet), so
        the handle is read first: before, a round started on the copy that answered the round before read the handle
        heal had just set to None (the search failed: the node's loss at the wrong millisecond), or a new copy's."""
        state = order[shard][position]
        handle = state.handle
        if handle is None or not state.serving:
            return None
        call_args = args if per_shard is None else (per_shard[shard],)
        return CopyCall(shard, position, self.calls.start(handle, method, *call_args), time.perf_counter())

    def _finish_round(
        self,
        order: dict[int, list[CopyState]],
        started: dict[int, CopyCall],
        method: str,
        *args: Any,  # noqa: ANN401
        per_shard: dict[int, Any] | None = None,
        span: SearchSpan | None = None,
        unknown_field_answer: Any = NOT_FILTERED,  # noqa: ANN401
    ) -> dict[int, tuple[CopyState, Any]]:
        """The results of `_start_round`'s calls: the first answer of each shard, its copies asked in turn when a
        call fails (the copy stops serving), times out (likewise), or its copy stopped serving meanwhile, and the
        next copy asked beside a late call; a call no longer needed is cancelled. The time waited for them and the
        calls made are counted in `span`. A shard's refusal for a field its documents lack is `unknown_field_answer`
        (as `_round` says)."""
        results: dict[int, tuple[CopyState, Any]] = {}
        unknown_fields: list[BaseException] = []
        waiting: dict[Future, CopyCall] = {}
        asked = {shard: call.position for shard, call in started.items()}
        timeout = self.calls.timeout(method)

        def watch(call: CopyCall) -> None:
            future = self.calls.waitable(call.pending)
            future.add_done_callback(lambda _: setattr(call, "answered", time.perf_counter()))
            waiting[future] = call

        def ask_next(shard: int) -> None:
            """Ask the shard's next copy not asked yet in this round that still serves, if there is one."""
            while asked[shard] + 1 < len(order[shard]):
                asked[shard] += 1
                call = self._call(order, shard, asked[shard], method, args, per_shard)  # None: heal stopped it
                if call is not None:
                    watch(call)
                    if span is not None:
                        span.calls += 1
                    return

        def drop(future: Future, call: CopyCall) -> None:
            """Give up on `call`; ask the shard's next copy unless another call of the shard is still out."""
            del waiting[future]
            self.calls.cancel(call.pending)
            if call.shard not in results and all(other.shard != call.shard for other in waiting.values()):
                ask_next(call.shard)

        def late_at(call: CopyCall) -> float:
            return call.started + self.latencies.hedge_delay(call.shard, method, timeout)

        for call in started.values():
            watch(call)
        if span is not None:
            span.calls += len(started)
        since = time.perf_counter()
        try:
            while waiting:
                now = time.perf_counter()
                wake = min([now + SERVING_CHECK_S] + [call.started + timeout for call in waiting.values()]
                           + [late_at(call) for call in waiting.values() if not call.hedged])  # fmt: skip
                done, _ = wait(list(waiting), timeout=max(0.0, wake - now), return_when=FIRST_COMPLETED)
                for future in done:
                    call = waiting.get(future)
                    if call is None:  # the loser of a hedge its shard's other call won in this same wake
                        continue
                    state = order[call.shard][call.position]
                    try:
                        error = future.exception()
                    except CancelledError as cancelled:  # not by this round (it waits on no call it gave up)
                        error = cancelled
                    if error is not None and copy_failed(error):
                        state.serving = False  # its process or node failed: heal restarts or rebuilds it
                        drop(future, call)
                        continue
                    if error is not None:
                        refused = request_error(error)
                        if unknown_field_answer is NOT_FILTERED or not isinstance(refused, LOCAL_REFUSALS):
                            raise refused from None
                        unknown_fields.append(refused)  # this shard's documents cannot match it: none matches
                    del waiting[future]
                    results[call.shard] = (state, unknown_field_answer if error is not None else future.result())
                    self.latencies.add(call.shard, method, (call.answered or time.perf_counter()) - call.started)
                    for other, other_call in list(waiting.items()):
                        if other_call.shard == call.shard:  # the loser of a hedge
                            del waiting[other]
                            self.calls.cancel(other_call.pending)
                now = time.perf_counter()
                for future, call in list(waiting.items()):
                    state = order[call.shard][call.position]
                    if now >= call.started + timeout or not state.serving:
                        state.serving = False  # timed out: it counts as failed, as a call that raised
                        drop(future, call)
                    elif not call.hedged and now >= late_at(call):
                        call.hedged = True  # late: the shard's next copy is asked too, the first answer kept
                        ask_next(call.shard)
        finally:
            for call in waiting.values():
                self.calls.cancel(call.pending)
            if span is not None:
                span.waiting(since)
        if unknown_fields and len(unknown_fields) == len(results):  # no shard could match: one index refuses it
            raise next((error for error in unknown_fields if isinstance(error, FieldKindError)), unknown_fields[0])
        return results
