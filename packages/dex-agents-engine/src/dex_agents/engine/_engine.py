"""The engine: runs in memory over a SQLite store, timers, and Worker dispatch.

Every state change goes through :meth:`Engine.transition`: mutate the run, commit the
collected :class:`Changes` in one transaction, then act on it (dispatch, arm timers,
wake long polls). After a crash, :meth:`Engine.open` rebuilds everything from the store.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import grpc
from dex.dexpb import dex_pb2 as pb
from google.protobuf.message import Message

from dex_agents.engine._config import EngineConfig, parse_worker_target
from dex_agents.engine._dispatch import AttemptFailure, Dispatcher, Task, TaskKind
from dex_agents.engine._errors import ServiceError, bad_request, flow_not_found
from dex_agents.engine._interpreter import Interpreter
from dex_agents.engine._model import Execution, Method, Phase, Run
from dex_agents.engine._pull import PullRouter
from dex_agents.engine._push import PushClient
from dex_agents.engine._state import InlineBlobs, apply_attribute_writes
from dex_agents.engine._store import Changes, Store
from dex_agents.engine._streams import StreamStore

__all__ = ["Engine"]

_LOGGER = logging.getLogger(__name__)
ENGINE_RESTARTED = "EngineRestarted"


class _AttemptListener:
    """Feeds one Step method attempt's outcome back into its run."""

    def __init__(self, engine: Engine, run: Run, exec_id: str) -> None:
        self._engine = engine
        self._run = run
        self._exec_id = exec_id

    def _current(self, task: Task) -> Execution | None:
        run = self._engine.runs.get(self._run.run_id)
        if run is None or not run.is_open:
            return None
        execution = run.executions.get(self._exec_id)
        if execution is None or execution.call is None or execution.call.task_id != task.task_id:
            return None
        self._run = run
        return execution

    def delivered(self, task: Task) -> None:
        execution = self._current(task)
        if execution is None or execution.call is None:
            return
        with self._engine.transition(self._run) as changes:
            execution.call.in_flight = True
            execution.call.delivered_attempts += 1
            execution.call.started_time = time.time()
            changes.save(self._run, execution)

    def returned(self, task: Task) -> None:
        execution = self._current(task)
        if execution is None or execution.call is None:
            return
        with self._engine.transition(self._run) as changes:
            execution.call.in_flight = False
            execution.call.delivered_attempts -= 1
            changes.save(self._run, execution)

    def progress(self, task: Task, output: Message) -> None:
        execution = self._current(task)
        if execution is None or execution.call is None:
            return
        if output.WhichOneof("output") == "stream_write":
            write = output.stream_write  # type: ignore[attr-defined]
            self._engine.streams.append_quietly(
                flow_id=self._run.flow_id,
                flow_type=self._run.flow_type,
                stream_name=write.stream_name,
                capacity=write.stream_capacity_bytes,
                value=write.value,
                source=f"#{execution.exec_id}",
            )
            return
        heartbeat = output.heartbeat  # type: ignore[attr-defined]
        with self._engine.transition(self._run) as changes:
            execution.call.checkpoint = heartbeat.value if heartbeat.HasField("value") else None
            changes.save(self._run, execution)

    def finished(self, task: Task, result: Message) -> None:
        execution = self._current(task)
        if execution is None:
            return
        with self._engine.transition(self._run) as changes:
            if task.kind is TaskKind.WAIT_FOR:
                assert isinstance(result, pb.InvokeWaitForMethodResponse)
                self._engine.wait_for_finished(self._run, execution, result, changes)
            else:
                assert isinstance(result, pb.InvokeExecuteMethodResponse)
                self._engine.execute_finished(self._run, execution, result, changes)

    def failed(self, task: Task, failure: AttemptFailure) -> None:
        execution = self._current(task)
        if execution is None:
            return
        with self._engine.transition(self._run) as changes:
            self._engine.attempt_failed(self._run, execution, failure, changes)


class Engine(Interpreter):
    """All runs of one data directory, and the machinery that moves them."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.store = Store(config.data_dir, config.durability)
        self.blobs = InlineBlobs(self.store, config.blob_threshold_bytes)
        self.indexes = self.store.indexes()
        self.default_target = parse_worker_target(config.default_worker_target)
        self.runs: dict[str, Run] = {}
        self.latest: dict[str, Run] = {}
        self.router = PullRouter()
        self.push = PushClient()
        self.dispatcher = Dispatcher(self.router, self.push)
        self.router.dispatcher = self.dispatcher
        self.push.dispatcher = self.dispatcher
        self.streams = StreamStore(self.store.db, config.max_long_poll_seconds)
        self._snapshots: dict[tuple[str, str], Message] = {}
        self._timers: dict[tuple[str, str, str], asyncio.TimerHandle] = {}
        self._changed: dict[str, asyncio.Event] = {}

    # Lifecycle ------------------------------------------------------------------------------

    def open(self) -> None:
        """Load every run and resume the open ones (call inside the event loop)."""
        for summary in self.store.summaries():
            run = self.store.load_run(summary)
            self._add(run)
        for run in list(self.runs.values()):
            if run.is_open:
                self._resume(run)

    async def close(self) -> None:
        """Stop timers, Worker streams and calls, then close the store."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self.dispatcher.close()
        self.router.close()
        await self.push.close()
        self.store.close()

    def _add(self, run: Run) -> None:
        self.runs[run.run_id] = run
        current = self.latest.get(run.flow_id)
        if current is None or current.seq <= run.seq:
            self.latest[run.flow_id] = run

    def _resume(self, run: Run) -> None:
        changes = Changes()
        if run.not_before:
            self._arm(("start", run.run_id, ""), run.not_before, lambda: self._delayed_start(run))
            return
        for execution in sorted(run.executions.values(), key=lambda e: e.seq):
            if execution.phase is Phase.RUNNING:
                keys = self.method_lock_keys(run, execution)
                for key in keys:
                    run.locks[key] = execution.exec_id
                execution.held_locks = keys
        for execution in sorted(run.executions.values(), key=lambda e: e.seq):
            call = execution.call
            if execution.phase is Phase.WAITING:
                self._arm_timers(run, execution)
            elif execution.phase is Phase.RUNNING and call is not None:
                if call.in_flight:
                    self.attempt_failed(
                        run,
                        execution,
                        AttemptFailure(
                            detail="the engine restarted while the attempt was running",
                            error_type=ENGINE_RESTARTED,
                            delivered=True,
                            grpc_status=14,
                        ),
                        changes,
                    )
                elif call.retry_at is not None:
                    self._arm_retry(run, execution)
                else:
                    changes.later(lambda e=execution: self._submit_attempt(run, e))  # type: ignore[misc]
        self.wake_lock_waiters(run, changes)
        self.evaluate_waits(run, changes)
        self.check_graceful_completion(run, changes)
        self._commit(run, changes)

    def _reload(self, run: Run) -> None:
        for summary in self.store.summaries():
            if summary.run_id == run.run_id:
                for key in [k for k in self._timers if k[1] == run.run_id]:
                    self._timers.pop(key).cancel()
                fresh = self.store.load_run(summary)
                self._add(fresh)
                if fresh.is_open:
                    self._resume(fresh)
                return

    # Transitions ----------------------------------------------------------------------------

    @contextmanager
    def transition(self, run: Run) -> Iterator[Changes]:
        """Collect one transition's changes; commit them, then run their follow-ups."""
        changes = Changes()
        try:
            yield changes
        except ServiceError:
            raise
        except BaseException:
            _LOGGER.exception("transition of run %s failed; reloading it", run.run_id)
            self._reload(run)
            raise
        self._commit(run, changes)

    def _commit(self, run: Run, changes: Changes) -> None:
        changes.touch(run)
        self.store.commit(changes)
        for action in changes.after_commit:
            action()
        self.notify(run.flow_id)

    def notify(self, flow_id: str) -> None:
        """Wake long polls watching a flow."""
        event = self._changed.pop(flow_id, None)
        if event is not None:
            event.set()

    def changed(self, flow_id: str) -> asyncio.Event:
        """An event set at the next change of a flow."""
        return self._changed.setdefault(flow_id, asyncio.Event())

    # Scheduling -----------------------------------------------------------------------------

    def _arm(self, key: tuple[str, str, str], at: float, action: Callable[[], None]) -> None:
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            action()

        delay = max(0.0, at - time.time())
        self._timers[key] = asyncio.get_running_loop().call_later(delay, fire)

    def _disarm(self, key: tuple[str, str, str]) -> None:
        handle = self._timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    def _arm_timers(self, run: Run, execution: Execution) -> None:
        pending = [
            t.firing for t in execution.timers if t.status == pb.INTERNAL_TIMER_STATUS_PENDING
        ]
        if not pending or execution.phase is not Phase.WAITING:
            return

        def due() -> None:
            current = self.runs.get(run.run_id)
            if current is None or not current.is_open:
                return
            live = current.executions.get(execution.exec_id)
            if live is None or live.phase is not Phase.WAITING:
                return
            with self.transition(current) as changes:
                self.timers_due(current, live, changes)

        self._arm(("timer", run.run_id, execution.exec_id), min(pending), due)

    def _arm_retry(self, run: Run, execution: Execution) -> None:
        call = execution.call
        if call is None or call.retry_at is None:
            return

        def retry() -> None:
            live = run.executions.get(execution.exec_id)
            if not run.is_open or live is not execution or execution.call is not call:
                return
            with self.transition(run) as changes:
                call.retry_at = None
                changes.save(run, execution)
                changes.later(lambda: self._submit_attempt(run, execution))

        self._arm(("retry", run.run_id, execution.exec_id), call.retry_at, retry)

    def _forget(self, run: Run, execution: Execution) -> None:
        self._disarm(("timer", run.run_id, execution.exec_id))
        self._disarm(("retry", run.run_id, execution.exec_id))
        self._snapshots.pop((run.run_id, execution.exec_id), None)

    def _remember_snapshot(self, run: Run, execution: Execution, request: Message) -> None:
        self._snapshots[(run.run_id, execution.exec_id)] = request

    def _snapshot(self, run: Run, execution: Execution) -> Message:
        key = (run.run_id, execution.exec_id)
        request = self._snapshots.get(key)
        if request is None:
            raw = self.store.snapshot(*key)
            assert raw is not None, f"no request snapshot for {key}"
            kind = (
                pb.InvokeWaitForMethodRequest
                if execution.method is Method.WAIT_FOR
                else pb.InvokeExecuteMethodRequest
            )
            request = kind.FromString(raw)
            self._snapshots[key] = request
        return request

    # Dispatch -------------------------------------------------------------------------------

    def target(self, run: Run) -> pb.WorkerTarget:
        """Where a run's tasks go: its config's Worker target or the engine default."""
        if run.config.HasField("worker_target") and (
            run.config.worker_target.address or run.config.worker_target.is_pull_mode
        ):
            return run.config.worker_target
        return self.default_target

    def _submit_attempt(self, run: Run, execution: Execution) -> None:
        call = execution.call
        if (
            not run.is_open
            or call is None
            or run.executions.get(execution.exec_id) is not execution
        ):
            return
        snapshot = self._snapshot(run, execution)
        request = type(snapshot)()
        request.CopyFrom(snapshot)
        context = request.context  # type: ignore[attr-defined]
        context.attempt = call.attempt
        context.first_attempt_timestamp = call.first_attempt_ts
        if call.checkpoint is not None:
            context.last_heartbeat_value.CopyFrom(self.blobs.offload(run.flow_id, call.checkpoint))
        timeout, heartbeat, _ = self.method_settings(run, execution)
        task = Task(
            kind=TaskKind.WAIT_FOR if execution.method is Method.WAIT_FOR else TaskKind.EXECUTE,
            flow_type=run.flow_type,
            target=self.target(run),
            request=request,
            listener=_AttemptListener(self, run, execution.exec_id),
            attempt_timeout=timeout,
            heartbeat_timeout=heartbeat,
            schedule_to_start=min(self.config.schedule_to_start_seconds, timeout),
        )
        call.task_id = task.task_id
        self.dispatcher.submit(task)

    def _cancel_task(self, task_id: str) -> None:
        self.dispatcher.cancel(task_id)

    # Flow lifecycle -------------------------------------------------------------------------

    def run_of(self, flow_id: str, *, active: bool) -> Run:
        """The latest run of a flow; with ``active``, it must still be running."""
        run = self.latest.get(flow_id)
        if run is None:
            raise flow_not_found(flow_id)
        if active and not run.is_open:
            raise flow_not_found(flow_id, closed=True)
        return run

    def start_flow(self, request: pb.StartFlowRequest) -> str:
        """Create a run (honouring id reuse and request-id idempotency); return its id."""
        _check_start(request, self.config.max_value_bytes)
        options = request.flow_start_options
        previous = self.latest.get(request.flow_id)
        if previous is not None:
            if (
                options.flow_already_started_options.ignore_already_started_error
                and previous.request_id == request.request_id
            ):
                return previous.run_id
            self._check_reuse(previous, options.id_reuse_policy)
        config = pb.FlowConfig()
        if options.HasField("flow_config_override"):
            config.CopyFrom(options.flow_config_override)
        run = Run(
            flow_id=request.flow_id,
            run_id=str(uuid.uuid4()),
            flow_type=request.flow_type,
            request_id=request.request_id,
            start_time=time.time(),
            config=config,
            start=request,
            seq=self.store.next_run_seq,
        )
        run.first_run_id = run.run_id
        self.store.next_run_seq += 1
        changes = Changes()
        if previous is not None and previous.is_open:
            self.close_run(previous, pb.FLOW_STATUS_TERMINATED, 0, "", changes)
            self._commit(previous, changes)
            changes = Changes()
        self._add(run)
        apply_attribute_writes(
            run,
            [
                w
                for w in options.attributes
                if w.value.WhichOneof("kind") not in (None, "null_value")
            ],
            changes,
            self.indexes,
        )
        event = pb.FlowHistoryEvent()
        started = event.flow_started_or_continued
        started.flow_execution_id.flow_id = run.flow_id
        started.flow_execution_id.run_id = run.run_id
        started.flow_type = run.flow_type
        started.flow_config.CopyFrom(config)
        started.initial_start.start_step_type = request.start_step_type
        self.record_event(run, changes, event)
        if options.flow_start_delay_seconds > 0:
            run.not_before = run.start_time + options.flow_start_delay_seconds
            changes.later(
                lambda: self._arm(
                    ("start", run.run_id, ""), run.not_before, lambda: self._delayed_start(run)
                )
            )
        else:
            self._begin(run, changes)
        self._commit(run, changes)
        return run.run_id

    def _begin(self, run: Run, changes: Changes) -> None:
        request = run.start
        if request.flow_timeout_seconds > 0:
            self.register_timeout_handler(run, request.flow_timeout_seconds, changes)
        if request.start_step_type:
            movement = pb.StepMovement(
                step_type=request.start_step_type,
                step_input=request.step_input,
                step_options=request.step_options,
                from_step_execution_id_internal_only="__start__",
            )
            self.register(run, movement, changes)

    def _delayed_start(self, run: Run) -> None:
        if not run.is_open or not run.not_before:
            return
        with self.transition(run) as changes:
            run.not_before = 0.0
            self._begin(run, changes)

    def _check_reuse(self, previous: Run, policy: int) -> None:
        def started() -> ServiceError:
            return ServiceError(
                code=grpc.StatusCode.ALREADY_EXISTS,
                message=f"flow {previous.flow_id!r} was already started",
                sub_status=pb.ERROR_SUB_STATUS_FLOW_ALREADY_STARTED,
            )

        if previous.is_open:
            if policy != pb.ID_REUSE_POLICY_ALLOW_TERMINATE_IF_RUNNING:
                raise started()
            return
        if policy in (
            pb.ID_REUSE_POLICY_ALLOW_IF_NO_RUNNING,
            pb.ID_REUSE_POLICY_ALLOW_TERMINATE_IF_RUNNING,
        ):
            return
        if policy == pb.ID_REUSE_POLICY_ALLOW_IF_PREVIOUS_EXISTS_ABNORMALLY and previous.status in (
            pb.FLOW_STATUS_FAILED,
            pb.FLOW_STATUS_CANCELED,
            pb.FLOW_STATUS_TERMINATED,
            pb.FLOW_STATUS_SERVER_SIDE_TIMEOUT_INTERNAL_ONLY,
        ):
            return
        raise started()

    def stop_flow(self, request: pb.StopFlowRequest) -> None:
        """Cancel, fail or terminate the running run of a flow."""
        run = self.run_of(request.flow_id, active=True)
        with self.transition(run) as changes:
            if request.stop_type == pb.STOP_TYPE_FAIL:
                self.close_run(
                    run,
                    pb.FLOW_STATUS_FAILED,
                    pb.FLOW_ERROR_TYPE_CLIENT_API_FAILING_FLOW,
                    request.reason or "fail by client",
                    changes,
                )
            elif request.stop_type == pb.STOP_TYPE_TERMINATE:
                self.close_run(run, pb.FLOW_STATUS_TERMINATED, 0, "", changes)
            else:
                self.close_run(run, pb.FLOW_STATUS_CANCELED, 0, "", changes)

    def update_flow_config(self, request: pb.UpdateFlowConfigRequest) -> None:
        """Merge the present fields of a config into the running run's config."""
        run = self.run_of(request.flow_id, active=True)
        update = request.flow_config
        if update.HasField("continue_as_new_threshold") and update.continue_as_new_threshold < 0:
            raise bad_request("continue_as_new_threshold must not be negative")
        if (
            update.HasField("continue_as_new_page_size_in_bytes")
            and update.continue_as_new_page_size_in_bytes < 0
        ):
            raise bad_request("continue_as_new_page_size_in_bytes must not be negative")
        if update.HasField("active_step_search_mode") and update.active_step_search_mode not in (
            pb.ActiveStepSearchMode.values()
        ):
            raise bad_request("unknown active_step_search_mode")
        if update.HasField("step_durability") and update.step_durability not in (
            pb.StepDurability.values()
        ):
            raise bad_request("unknown step_durability")
        with self.transition(run) as changes:
            run.config.MergeFrom(update)
            changes.touch(run)

    def skip_timer(self, request: pb.SkipTimerRequest) -> None:
        """Skip a timer of a waiting execution, or remember the skip until it waits."""
        run = self.run_of(request.flow_id, active=True)
        index = request.timer_condition_index if request.HasField("timer_condition_index") else None
        condition_id = None if index is not None else request.timer_condition_id
        with self.transition(run) as changes:
            execution = run.executions.get(request.step_execution_id)
            if execution is not None and execution.phase is Phase.WAITING:
                if not self.skip_timer_of(run, execution, condition_id, index, changes):
                    raise bad_request("requested timer condition does not exist or is not pending")
                return
            step_type, _, number = request.step_execution_id.rpartition("-")
            if not number.isdigit() or (
                execution is None and int(number) <= run.counters.get(step_type, 0)
            ):
                raise bad_request(f"Step execution {request.step_execution_id!r} is not active")
            run.pending_skips.append([request.step_execution_id, condition_id, index])

    def skip_timer_of(
        self,
        run: Run,
        execution: Execution,
        condition_id: str | None,
        index: int | None,
        changes: Changes,
    ) -> bool:
        """Skip one timer of a waiting execution and re-evaluate its wait."""
        if not self.mark_timer_skipped(execution, condition_id, index):
            return False
        changes.save(run, execution)
        self.evaluate_waits(run, changes)
        return True


def _check_start(request: pb.StartFlowRequest, max_value_bytes: int) -> None:
    if not request.flow_id.strip():
        raise bad_request("flow_id must not be empty")
    if not request.flow_type:
        raise bad_request("flow_type must not be empty")
    if not request.request_id:
        raise bad_request("request_id must not be empty")
    for text, what in ((request.flow_id, "flow_id"), (request.start_step_type, "start_step_type")):
        if any(char in text for char in ("/", "$", ":")):
            raise bad_request(f"{what} {text!r} must not contain '/', '$' or ':'")
    if request.start_step_type and not request.HasField("step_input"):
        raise bad_request("step_input is required with a start Step")
    if request.flow_timeout_seconds < 0:
        raise bad_request("flow_timeout_seconds must not be negative")
    if request.ByteSize() > max_value_bytes:
        raise bad_request(f"the start request is larger than {max_value_bytes} bytes")
