"""The per-run state machine: Step executions, their waits, results, failures and close.

Every method here mutates one run and records what it wrote in a :class:`Changes`; the
engine commits those changes in one transaction and only then runs ``after_commit``
actions (dispatching attempts, arming timers). Nothing here awaits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from dex.dexpb import dex_pb2 as pb
from google.protobuf.message import Message

from dex_agents.engine._conditions import build_condition_results, plan_wait
from dex_agents.engine._dispatch import AttemptFailure
from dex_agents.engine._model import Execution, Method, MethodCall, Phase, Run, TimerState
from dex_agents.engine._retry import RetrySettings, next_retry_delay
from dex_agents.engine._state import (
    BlobSink,
    apply_attribute_writes,
    apply_deletions,
    apply_publications,
    fill_state,
)
from dex_agents.engine._store import Changes

if TYPE_CHECKING:
    from dex_agents.engine._config import EngineConfig

__all__ = ["ATTEMPT_NOT_STARTED", "TIMEOUT_HANDLER_STEP", "Interpreter"]

ATTEMPT_NOT_STARTED = "dex_agents.engine.AttemptNotStarted"
"""``RecoveryErrorInfo.error_type`` when no attempt of the failed method reached a Worker.

SDK 1.23.0 has no ``attempt_progress``; a failure route that sees this type knows the
handler never ran (``NOT_STARTED``). Any other type means an attempt may have run.
"""

TIMEOUT_HANDLER_STEP = "sys:timeout_handler"
_TIMEOUT_HANDLER_ID = f"{TIMEOUT_HANDLER_STEP}-1"
_RESERVED = ("/", "$", ":")


def _invalid_step_type(step_type: str) -> bool:
    return not step_type or any(char in step_type for char in _RESERVED)


class Interpreter:
    """Flow semantics over in-memory runs; the engine supplies I/O through the hooks."""

    config: EngineConfig
    blobs: BlobSink
    indexes: dict[str, int]

    # Hooks the engine implements ----------------------------------------------------------------

    def _submit_attempt(self, run: Run, execution: Execution) -> None:
        raise NotImplementedError

    def _cancel_task(self, task_id: str) -> None:
        raise NotImplementedError

    def _arm_timers(self, run: Run, execution: Execution) -> None:
        raise NotImplementedError

    def _arm_retry(self, run: Run, execution: Execution) -> None:
        raise NotImplementedError

    def _forget(self, run: Run, execution: Execution) -> None:
        raise NotImplementedError

    def _remember_snapshot(self, run: Run, execution: Execution, request: Message) -> None:
        raise NotImplementedError

    def record_event(self, run: Run, changes: Changes, event: pb.FlowHistoryEvent) -> None:
        event.event_id = run.next_event_id
        event.event_time.FromNanoseconds(time.time_ns())
        event.run_attempt = run.run_attempt
        run.next_event_id += 1
        changes.history.append((run.run_id, event.event_id, event.SerializeToString()))

    # Registration ---------------------------------------------------------------------------

    def register(self, run: Run, movement: pb.StepMovement, changes: Changes) -> None:
        """Start a Step execution for a movement (it gets the next ``<type>-<n>`` id)."""
        if _invalid_step_type(movement.step_type):
            self.close_run(
                run,
                pb.FLOW_STATUS_FAILED,
                pb.FLOW_ERROR_TYPE_INVALID_USER_FLOW_CODE,
                f"invalid Step type {movement.step_type!r}",
                changes,
            )
            return
        number = run.counters.get(movement.step_type, 0) + 1
        run.counters[movement.step_type] = number
        stored = pb.StepMovement()
        stored.CopyFrom(movement)
        if not stored.HasField("step_input"):
            stored.step_input.null_value = 0  # type: ignore[assignment]
        execution = Execution(
            exec_id=f"{movement.step_type}-{number}",
            step_type=movement.step_type,
            seq=run.next_exec_seq,
            movement=stored,
        )
        run.next_exec_seq += 1
        run.executions[execution.exec_id] = execution
        method = Method.EXECUTE if stored.step_options.skip_wait_for else Method.WAIT_FOR
        self.begin_method(run, execution, method, changes)

    def register_timeout_handler(self, run: Run, timeout_seconds: int, changes: Changes) -> None:
        """Add the flow-timeout system Step, already waiting on its one timer."""
        firing = math.ceil(run.start_time + timeout_seconds)
        wait = pb.WaitingCondition(waiting_condition_type=pb.WAITING_CONDITION_TYPE_ANY_COMPLETED)
        wait.timer_conditions.add(
            duration_seconds=timeout_seconds, firing_unix_timestamp_seconds=firing
        )
        execution = Execution(
            exec_id=_TIMEOUT_HANDLER_ID,
            step_type=TIMEOUT_HANDLER_STEP,
            seq=0,
            movement=pb.StepMovement(
                step_type=TIMEOUT_HANDLER_STEP, from_step_execution_id_internal_only="__start__"
            ),
            phase=Phase.WAITING,
            waiting=wait,
            timers=[TimerState("", firing)],
            system=True,
        )
        run.executions[execution.exec_id] = execution
        changes.save(run, execution)
        changes.later(lambda: self._arm_timers(run, execution))

    # Methods --------------------------------------------------------------------------------

    def method_lock_keys(self, run: Run, execution: Execution) -> tuple[str, ...]:
        """The Attribute keys the execution's current method must hold."""
        if execution.system:
            return tuple(self._handler_options(run).lock_attribute_keys)
        options = execution.options
        keys = (
            options.wait_for_lock_attribute_keys
            if execution.method is Method.WAIT_FOR
            else options.execute_lock_attribute_keys
        )
        return tuple(keys)

    def begin_method(
        self, run: Run, execution: Execution, method: Method, changes: Changes
    ) -> None:
        """Take the method's locks (or queue for them), then schedule its first attempt."""
        execution.method = method
        keys = self.method_lock_keys(run, execution)
        if keys and not self._try_lock(run, keys, execution.exec_id):
            execution.phase = Phase.LOCKING
            changes.save(run, execution)
            return
        execution.held_locks = keys
        self._schedule_call(run, execution, changes)

    def _try_lock(self, run: Run, keys: tuple[str, ...], holder: str) -> bool:
        if any(key in run.locks for key in keys):
            return False
        for key in keys:
            run.locks[key] = holder
        return True

    def _release_locks(self, run: Run, execution: Execution, changes: Changes) -> None:
        if not execution.held_locks:
            return
        for key in execution.held_locks:
            if run.locks.get(key) == execution.exec_id:
                del run.locks[key]
        execution.held_locks = ()
        self.wake_lock_waiters(run, changes)

    def wake_lock_waiters(self, run: Run, changes: Changes) -> None:
        """Give freed locks to executions waiting for them, oldest first."""
        waiting = sorted(
            (e for e in run.executions.values() if e.phase is Phase.LOCKING), key=lambda e: e.seq
        )
        for execution in waiting:
            keys = self.method_lock_keys(run, execution)
            if self._try_lock(run, keys, execution.exec_id):
                execution.held_locks = keys
                self._schedule_call(run, execution, changes)

    def _schedule_call(self, run: Run, execution: Execution, changes: Changes) -> None:
        execution.phase = Phase.RUNNING
        execution.call = MethodCall(method=execution.method, first_attempt_ts=int(time.time()))
        request = self._build_request(run, execution)
        changes.snapshots[(run.run_id, execution.exec_id)] = request.SerializeToString()
        self._remember_snapshot(run, execution, request)
        changes.save(run, execution)
        changes.later(lambda: self._submit_attempt(run, execution))

    def _handler_options(self, run: Run) -> pb.FlowTimeoutHandlerOptions:
        return run.start.flow_start_options.timeout_handler_options

    def _build_request(self, run: Run, execution: Execution) -> Message:
        options = execution.options
        request: pb.InvokeWaitForMethodRequest | pb.InvokeExecuteMethodRequest
        if execution.method is Method.WAIT_FOR:
            request = pb.InvokeWaitForMethodRequest(
                flow_type=run.flow_type, step_type=execution.step_type
            )
            fill_state(
                run,
                request,
                options.wait_for_load_attribute_map_instances,
                options.wait_for_load_channel_names,
                options.wait_for_load_channel_map_instances,
                self.blobs,
            )
        else:
            request = pb.InvokeExecuteMethodRequest(
                flow_type=run.flow_type, step_type=execution.step_type
            )
            if execution.system:
                handler = self._handler_options(run)
                loads = (
                    handler.load_attribute_map_instances,
                    handler.load_channel_names,
                    handler.load_channel_map_instances,
                )
            else:
                loads = (
                    options.execute_load_attribute_map_instances,
                    options.execute_load_channel_names,
                    options.execute_load_channel_map_instances,
                )
            fill_state(run, request, *loads, self.blobs)
            request.step_exe_locals.extend(execution.locals)
            if execution.condition_results is not None:
                request.condition_results.CopyFrom(execution.condition_results)
        if not execution.system:
            request.step_input.CopyFrom(
                self.blobs.offload(run.flow_id, execution.movement.step_input)
            )
        context = request.context
        context.flow_id = run.flow_id
        context.run_id = run.run_id
        context.flow_started_timestamp = int(run.start_time)
        context.step_execution_id = execution.exec_id
        context.from_step_execution_id = execution.from_id
        context.run_attempt = run.run_attempt
        if execution.recovery is not None:
            context.recovery_error.CopyFrom(execution.recovery)
        elif execution.movement.HasField("recovery_error_internal_only"):
            context.recovery_error.CopyFrom(execution.movement.recovery_error_internal_only)
        return request

    def method_settings(
        self, run: Run, execution: Execution
    ) -> tuple[float, float | None, RetrySettings]:
        """Attempt timeout, heartbeat timeout and retry policy of the current method."""
        config = self.config
        if execution.system:
            handler = self._handler_options(run)
            timeout = handler.method_timeout_seconds
            heartbeat = handler.heartbeat_timeout_seconds
            retry = handler.retry_policy if handler.HasField("retry_policy") else None
        else:
            options = execution.options
            waiting = execution.method is Method.WAIT_FOR
            timeout = (
                options.wait_for_timeout_seconds if waiting else options.execute_timeout_seconds
            )
            heartbeat = options.heartbeat_timeout_seconds
            field = "wait_for_retry_policy" if waiting else "execute_retry_policy"
            retry = getattr(options, field) if options.HasField(field) else None
        heartbeat = heartbeat or config.default_heartbeat_timeout_seconds
        heartbeat_timeout = (
            float(max(heartbeat, config.min_heartbeat_timeout_seconds)) if heartbeat else None
        )
        return (
            float(timeout or config.default_method_timeout_seconds),
            heartbeat_timeout,
            RetrySettings.from_proto(retry),
        )

    # Results --------------------------------------------------------------------------------

    def _end_call(self, run: Run, execution: Execution, changes: Changes) -> MethodCall:
        call = execution.call
        assert call is not None
        execution.call = None
        changes.snapshots[(run.run_id, execution.exec_id)] = None
        return call

    def _event_context(self, execution: Execution, call: MethodCall) -> pb.StepMethodEventContext:
        context = pb.StepMethodEventContext(
            step_execution_id=execution.exec_id,
            from_step_execution_id=execution.from_id,
            step_type=execution.step_type,
            durability=pb.STEP_DURABILITY_SYNC,
            final_attempt=call.attempt,
        )
        if call.started_time:
            context.started_time.FromNanoseconds(int(call.started_time * 1e9))
            context.duration.FromNanoseconds(int((time.time() - call.started_time) * 1e9))
        if call.last_failure is not None:
            context.last_failure_info.CopyFrom(call.last_failure)
        return context

    def wait_for_finished(
        self,
        run: Run,
        execution: Execution,
        result: pb.InvokeWaitForMethodResponse,
        changes: Changes,
    ) -> None:
        """Apply a ``wait_for`` result and start waiting on its conditions."""
        call = self._end_call(run, execution, changes)
        apply_attribute_writes(run, result.upsert_attributes, changes, self.indexes)
        apply_publications(run, result.publish_to_channel, changes)
        apply_deletions(run, result.delete_from_channel, changes)
        self._release_locks(run, execution, changes)
        execution.locals = list(result.upsert_step_exe_locals)
        event = pb.FlowHistoryEvent()
        completed = event.step_wait_for_completed
        completed.input.unavailable = True
        completed.output.wait_for_condition.CopyFrom(result.waiting_condition)
        completed.output.upsert_attributes.extend(result.upsert_attributes)
        completed.output.record_events.extend(result.record_events)
        completed.context.CopyFrom(self._event_context(execution, call))
        self.record_event(run, changes, event)
        if not result.HasField("waiting_condition"):
            execution.condition_results = pb.ConditionResults()
            self.begin_method(run, execution, Method.EXECUTE, changes)
        elif result.waiting_condition.sub_flow_conditions:
            self.close_run(
                run,
                pb.FLOW_STATUS_FAILED,
                pb.FLOW_ERROR_TYPE_INVALID_USER_FLOW_CODE,
                "SubFlow conditions are not supported by dex-agents-engine",
                changes,
            )
            return
        else:
            now = time.time()
            execution.waiting = result.waiting_condition
            execution.timers = [
                TimerState(timer.condition_id, math.ceil(now + timer.duration_seconds))
                for timer in result.waiting_condition.timer_conditions
            ]
            execution.phase = Phase.WAITING
            self._apply_pending_skips(run, execution)
            changes.save(run, execution)
            changes.later(lambda: self._arm_timers(run, execution))
        self.evaluate_waits(run, changes)

    def _apply_pending_skips(self, run: Run, execution: Execution) -> None:
        kept = []
        for exec_id, condition_id, index in run.pending_skips:
            if exec_id != execution.exec_id or not self.mark_timer_skipped(
                execution, condition_id, index
            ):
                kept.append([exec_id, condition_id, index])
        run.pending_skips = kept

    def mark_timer_skipped(
        self, execution: Execution, condition_id: str | None, index: int | None
    ) -> bool:
        """Mark one pending timer of a waiting execution skipped; False if none matches."""
        for position, timer in enumerate(execution.timers):
            if timer.status != pb.INTERNAL_TIMER_STATUS_PENDING:
                continue
            if (index is not None and position == index) or (
                index is None and timer.condition_id == condition_id
            ):
                timer.status = pb.INTERNAL_TIMER_STATUS_SKIPPED
                return True
        return False

    def execute_finished(
        self,
        run: Run,
        execution: Execution,
        result: pb.InvokeExecuteMethodResponse,
        changes: Changes,
    ) -> None:
        """Apply an ``execute`` result and its decision."""
        call = self._end_call(run, execution, changes)
        apply_attribute_writes(run, result.upsert_attributes, changes, self.indexes)
        apply_publications(run, result.publish_to_channel, changes)
        apply_deletions(run, result.delete_from_channel, changes)
        event = pb.FlowHistoryEvent()
        completed = event.step_execute_completed
        completed.input.unavailable = True
        completed.output.step_decision.CopyFrom(result.step_decision)
        completed.output.upsert_attributes.extend(result.upsert_attributes)
        completed.output.record_events.extend(result.record_events)
        completed.context.CopyFrom(self._event_context(execution, call))
        self.record_event(run, changes, event)
        self.apply_decision(run, execution, result.step_decision, changes)

    def apply_decision(
        self, run: Run, execution: Execution, decision: pb.StepDecision, changes: Changes
    ) -> None:
        """Cancel, then close or move on, in the order Dex applies a Step decision."""
        cancel_types = set(decision.cancel_step_types)
        sibling_types = set(decision.cancel_sibling_step_types)
        for other in list(run.executions.values()):
            if other is execution or other.system:
                continue
            if other.step_type in cancel_types or (
                other.step_type in sibling_types and other.from_id == execution.from_id
            ):
                self.cancel_execution(run, other, changes)
        self.finish_execution(run, execution, changes)
        close = decision.close_decision
        kind = close.close_decision_type if decision.HasField("close_decision") else 0
        if kind == pb.CLOSE_DECISION_TYPE_FORCE_FAIL:
            self.close_run(
                run,
                pb.FLOW_STATUS_FAILED,
                pb.FLOW_ERROR_TYPE_STEP_DECISION_FAILING_FLOW,
                close.close_input.string_value,
                changes,
            )
            return
        if kind == pb.CLOSE_DECISION_TYPE_FORCE_COMPLETE or (
            kind == pb.CLOSE_DECISION_TYPE_FORCE_COMPLETE_ON_CHANNELS_EMPTY
            and not any(run.channels.get(name) for name in close.conditional_channel_names)
        ):
            self._collect_output(run, execution, close)
            self.close_run(run, pb.FLOW_STATUS_COMPLETED, 0, "", changes)
            return
        if kind == pb.CLOSE_DECISION_TYPE_GRACEFUL_COMPLETE:
            self._collect_output(run, execution, close)
            run.graceful = True
        if kind != pb.CLOSE_DECISION_TYPE_DEAD_END:
            self.enqueue(run, decision.next_steps, execution.exec_id, changes)
        self.evaluate_waits(run, changes)
        self.check_graceful_completion(run, changes)

    def _collect_output(self, run: Run, execution: Execution, close: pb.CloseDecision) -> None:
        if close.HasField("close_input") and close.close_input.WhichOneof("kind") not in (
            None,
            "null_value",
        ):
            run.outputs.append(
                pb.StepCompletionOutput(
                    completed_step_type=execution.step_type,
                    completed_step_execution_id=execution.exec_id,
                    completed_step_output=close.close_input,
                )
            )

    def enqueue(
        self,
        run: Run,
        movements: Iterable[pb.StepMovement],
        from_id: str,
        changes: Changes,
    ) -> None:
        """Register next Steps with server-owned lineage."""
        for movement in movements:
            if not run.is_open:
                return
            owned = pb.StepMovement()
            owned.CopyFrom(movement)
            owned.from_step_execution_id_internal_only = from_id
            owned.ClearField("recovery_error_internal_only")
            self.register(run, owned, changes)

    def check_graceful_completion(self, run: Run, changes: Changes) -> None:
        """Complete a gracefully closing run once no user Step is active."""
        if (
            run.is_open
            and run.graceful
            and not any(not execution.system for execution in run.executions.values())
        ):
            self.close_run(run, pb.FLOW_STATUS_COMPLETED, 0, "", changes)

    def finish_execution(self, run: Run, execution: Execution, changes: Changes) -> None:
        """Remove a completed, failed-over or cancelled execution from the active set."""
        if execution.call is not None:
            if execution.call.task_id:
                task_id = execution.call.task_id
                changes.later(lambda: self._cancel_task(task_id))
            execution.call = None
        self._release_locks(run, execution, changes)
        run.executions.pop(execution.exec_id, None)
        changes.drop(run, execution)
        self._forget(run, execution)

    def cancel_execution(self, run: Run, execution: Execution, changes: Changes) -> None:
        """Cancel an execution; whatever its Worker returns later is discarded."""
        self.finish_execution(run, execution, changes)

    # Waits ----------------------------------------------------------------------------------

    def evaluate_waits(self, run: Run, changes: Changes) -> None:
        """Let waiting executions whose conditions hold consume and move on, oldest first."""
        if not run.is_open:
            return
        waiting = sorted(
            (e for e in run.executions.values() if e.phase is Phase.WAITING),
            key=lambda e: (not e.system, e.seq),
        )
        for execution in waiting:
            if run.status != pb.FLOW_STATUS_RUNNING:
                return
            assert execution.waiting is not None
            sizes = {name: len(queue) for name, queue in run.channels.items()}
            done = [timer.done for timer in execution.timers]
            plan = plan_wait(execution.waiting, done, sizes)
            if plan is None:
                continue
            consumed: dict[int, list[pb.Value]] = {}
            for index, count in sorted(plan.takes.items()):
                name = execution.waiting.channel_conditions[index].channel_name
                queue = run.channels.get(name)
                values = []
                for _ in range(count):
                    assert queue
                    entry = queue.popleft()
                    changes.channel_removed.append((run.run_id, entry.seq))
                    values.append(entry.value)
                consumed[index] = values
            execution.condition_results = build_condition_results(execution.waiting, done, consumed)
            self._forget(run, execution)
            if execution.system:
                self._flow_timed_out(run, execution, changes)
            else:
                self.begin_method(run, execution, Method.EXECUTE, changes)

    def _flow_timed_out(self, run: Run, execution: Execution, changes: Changes) -> None:
        policy = run.start.flow_timeout_policy
        if policy == pb.FLOW_TIMEOUT_POLICY_HANDLER:
            execution.condition_results = None
            self.begin_method(run, execution, Method.EXECUTE, changes)
        elif policy == pb.FLOW_TIMEOUT_POLICY_CANCEL:
            self.close_run(run, pb.FLOW_STATUS_CANCELED, 0, "", changes)
        else:
            self.close_run(
                run,
                pb.FLOW_STATUS_FAILED,
                pb.FLOW_ERROR_TYPE_FLOW_TIMEOUT,
                f"Flow timed out after {run.start.flow_timeout_seconds} seconds",
                changes,
            )

    def timers_due(self, run: Run, execution: Execution, changes: Changes) -> None:
        """Fire the execution's timers whose time has come."""
        now = time.time()
        for timer in execution.timers:
            if timer.status == pb.INTERNAL_TIMER_STATUS_PENDING and timer.firing <= now:
                timer.status = pb.INTERNAL_TIMER_STATUS_FIRED
        changes.save(run, execution)
        self.evaluate_waits(run, changes)
        if execution.exec_id in run.executions and execution.phase is Phase.WAITING:
            changes.later(lambda: self._arm_timers(run, execution))

    # Failures -------------------------------------------------------------------------------

    def attempt_failed(
        self, run: Run, execution: Execution, failure: AttemptFailure, changes: Changes
    ) -> None:
        """Record a failed attempt, then retry later or take the failure route."""
        call = execution.call
        assert call is not None
        call.in_flight = False
        call.task_id = ""
        details = pb.ServiceErrorResponse(
            detail=failure.detail,
            sub_status=pb.ERROR_SUB_STATUS_WORKER_API_ERROR,
            original_worker_error_detail=failure.detail,
            original_worker_error_type=failure.error_type,
            original_worker_error_status=failure.grpc_status,
            original_worker_error_stack_trace=failure.stack_trace,
            dispatch_task_error_reason=failure.dispatch_error,  # type: ignore[arg-type]
        )
        call.last_failure = pb.StepMethodFailure(
            backend_error=failure.detail, details=details, attempt=call.attempt
        )
        _, _, retry = self.method_settings(run, execution)
        delay = next_retry_delay(
            retry, call.attempt, time.time() - call.first_attempt_ts, failure.retry_after_seconds
        )
        if delay is not None:
            call.attempt += 1
            call.retry_at = time.time() + delay
            changes.save(run, execution)
            changes.later(lambda: self._arm_retry(run, execution))
            return
        self._final_failure(run, execution, failure, changes)

    def _final_failure(
        self, run: Run, execution: Execution, failure: AttemptFailure, changes: Changes
    ) -> None:
        call = self._end_call(run, execution, changes)
        self._release_locks(run, execution, changes)
        error_type = ATTEMPT_NOT_STARTED if call.delivered_attempts == 0 else failure.error_type
        recovery = pb.RecoveryErrorInfo(detail=failure.detail, error_type=error_type)
        event = pb.FlowHistoryEvent()
        failed = (
            event.step_wait_for_failed
            if execution.method is Method.WAIT_FOR
            else event.step_execute_failed
        )
        failed.input.unavailable = True
        if call.last_failure is not None:
            failed.output.failure.CopyFrom(call.last_failure)
        failed.context.CopyFrom(self._event_context(execution, call))
        self.record_event(run, changes, event)
        options = execution.options
        if execution.method is Method.WAIT_FOR:
            if (
                options.wait_for_failure_policy
                == pb.WAIT_FOR_METHOD_FAILURE_POLICY_PROCEED_ON_FAILURE
            ):
                execution.recovery = recovery
                execution.condition_results = pb.ConditionResults(wait_for_failed=True)
                self.begin_method(run, execution, Method.EXECUTE, changes)
                return
        else:
            if execution.system:
                handler = self._handler_options(run)
                policy, target, target_options = (
                    handler.failure_policy,
                    handler.failure_proceed_step_type,
                    handler.failure_proceed_step_options,
                )
                step_input = pb.Value(null_value=0)  # type: ignore[arg-type]
            else:
                policy, target, target_options = (
                    options.execute_failure_policy,
                    options.execute_failure_proceed_step_type,
                    options.execute_failure_proceed_step_options,
                )
                step_input = execution.movement.step_input
            if policy == pb.EXECUTE_METHOD_FAILURE_POLICY_PROCEED_TO_CONFIGURED_STEP and target:
                self.finish_execution(run, execution, changes)
                self.register(
                    run,
                    pb.StepMovement(
                        step_type=target,
                        step_input=step_input,
                        step_options=target_options,
                        from_step_execution_id_internal_only=execution.exec_id,
                        recovery_error_internal_only=recovery,
                    ),
                    changes,
                )
                self.check_graceful_completion(run, changes)
                return
        self.close_run(
            run, pb.FLOW_STATUS_FAILED, pb.FLOW_ERROR_TYPE_WORKER_API_FAIL, failure.detail, changes
        )

    # Close ----------------------------------------------------------------------------------

    def close_run(
        self, run: Run, status: int, error_type: int, message: str, changes: Changes
    ) -> None:
        """Close a run: cancel everything still active and record the result."""
        if not run.is_open:
            return
        for execution in sorted(run.executions.values(), key=lambda e: e.seq):
            self.cancel_execution(run, execution, changes)
        run.locks.clear()
        run.status = status
        run.error_type = error_type
        run.error_message = message
        run.close_time = time.time()
        event = pb.FlowHistoryEvent()
        closed = event.flow_closed
        closed.flow_status = status  # type: ignore[assignment]
        closed.results.extend(run.outputs)
        closed.error_type = error_type  # type: ignore[assignment]
        closed.error_message = message
        self.record_event(run, changes, event)
        changes.touch(run)
