"""Client: acceld's Coordinator API (proto/accel/v1/coordinator.proto) for Python callers.

Jobs, events, checkpoints and the cluster come back as plain dicts made by protobuf's
json_format.MessageToDict with the proto field names and every scalar field present (so the
keys are those of `accelctl ... --output json`). As in proto3 JSON, enums are their names
("SUCCEEDED") and int64 fields are decimal strings ("seq": "3"): int(event["seq"]).

Every unary call carries a deadline (the client's `timeout`); a followed watch carries none,
and ends when the job has ended or when its iterator is closed.
"""

import os

import grpc
from google.protobuf import json_format

from accel.v1 import coordinator_pb2, coordinator_pb2_grpc, job_pb2

from .arguments import check_seconds, check_target, read_token
from .errors import AccelError, translated

# States a job never leaves (docs/rpc.md "Job states").
TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


def to_dict(message):
    """A protobuf message as accel_client's dicts are: proto field names, defaults included."""
    try:
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         including_default_value_fields=True)
    except TypeError:  # protobuf >= 5.26 renamed the option
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)


def _ledger_name(value, prefix):
    """The ledger's name of a proto enum name: "MEMORY_POOL_COMPUTE" -> "compute"."""
    value = str(value)
    return (value[len(prefix):] if value.startswith(prefix) else value).lower()


def memory_figures(event):
    """The ledger of a memory event dict (event["memory"]["pools"], typed pools x categories)
    by the ledger's names: {"compute": {"params": {"current": 4096, "peak": 4096}, ...,
    "total": {...}}, "host": {...}, "nvme": {...}} with int bytes; the figures `accelctl watch`,
    the dashboard and /metrics show. {} for an event without pools."""
    figures = {}
    for pool in event.get("memory", {}).get("pools", []):
        categories = figures.setdefault(_ledger_name(pool.get("pool", ""), "MEMORY_POOL_"), {})
        for c in pool.get("categories", []):
            categories[_ledger_name(c.get("category", ""), "MEMORY_CATEGORY_")] = {
                "current": int(c.get("current", 0)), "peak": int(c.get("peak", 0))}
        categories["total"] = {"current": int(pool.get("total_current", 0)),
                               "peak": int(pool.get("total_peak", 0))}
    return figures


class Client:
    """A connection to one acceld.

    target: "host:port" (e.g. "127.0.0.1:7070", acceld's --listen) or "unix:/path/acceld.sock".
    token / token_file: the client token, or the file holding it (acceld's <state-dir>/token;
    "~" expands); one of them. Surrounding whitespace is ignored; the token must be printable
    ASCII without spaces, at most 4096 bytes, and the file a regular file (acceld's rules).
    timeout: seconds every unary call may take, finite and > 0 (CancelJob waits for the gang to
    stop, up to 60 s on acceld's side, so keep it above that when cancelling big jobs).
    Every argument is checked here; a bad one is a ValueError naming it.
    """

    def __init__(self, target, token=None, token_file=None, timeout=30.0):
        self._timeout = check_seconds("timeout", timeout)
        target = check_target(target)
        self._metadata = (("authorization", "Bearer " + read_token(token, token_file)),)
        self._channel = grpc.insecure_channel(target)
        self._stub = coordinator_pb2_grpc.CoordinatorStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _call(self, method, request):
        with translated():
            return method(request, timeout=self._timeout, metadata=self._metadata)

    # ---- jobs --------------------------------------------------------------------------------

    def submit(self, job_yaml_path, config=None, deepspeed_config=None):
        """Submits a job file (docs/job.md) with optional Accelerate / DeepSpeed config files;
        acceld reads and parses them exactly as `accelctl submit` does, so it must see these
        paths (they are sent absolute). Returns the queued job."""
        request = coordinator_pb2.SubmitJobRequest(
            job_file=os.path.abspath(job_yaml_path),
            accelerate_config=os.path.abspath(config) if config else "",
            deepspeed_config=os.path.abspath(deepspeed_config) if deepspeed_config else "")
        return to_dict(self._call(self._stub.SubmitJob, request).job)

    def status(self, job_id):
        return to_dict(self._call(self._stub.GetJob, coordinator_pb2.GetJobRequest(job_id=job_id)))

    def list(self, states=(), limit=0):
        """Jobs, newest first; states: names such as ("RUNNING", "QUEUED") (empty: all)."""
        request = coordinator_pb2.ListJobsRequest(
            states=[job_pb2.JobState.Value(s) for s in states], limit=limit)
        return [to_dict(job) for job in self._call(self._stub.ListJobs, request).jobs]

    def cancel(self, job_id):
        """Stops the job's gang; returns the job once it is CANCELLED."""
        return to_dict(self._call(self._stub.CancelJob,
                                  coordinator_pb2.CancelJobRequest(job_id=job_id)))

    def delete(self, job_id):
        """Forgets an ended job (its checkpoint files stay); returns the job as it was."""
        return to_dict(self._call(self._stub.DeleteJob,
                                  coordinator_pb2.DeleteJobRequest(job_id=job_id)))

    def checkpoints(self, job_id):
        request = coordinator_pb2.ListCheckpointsRequest(job_id=job_id)
        return [to_dict(c) for c in self._call(self._stub.ListCheckpoints, request).checkpoints]

    def cluster(self):
        return to_dict(self._call(self._stub.GetCluster, coordinator_pb2.GetClusterRequest()))

    # ---- events ------------------------------------------------------------------------------

    def watch(self, job_id, from_seq=0):
        """Iterator over the job's events with seq > from_seq, in seq order, following live
        ones until the job's final state event. close() it (or contextlib.closing) to stop
        early; the stream has no deadline."""
        request = coordinator_pb2.WatchJobRequest(job_id=job_id, from_seq=from_seq, follow=True)
        return self._events(request, timeout=None)

    def wait(self, job_id, timeout=None):
        """Follows the job until it ends and returns the final job. timeout: seconds, or None
        for no limit; past it, AccelError DEADLINE_EXCEEDED."""
        request = coordinator_pb2.WatchJobRequest(job_id=job_id, follow=True,
                                                  kinds=[coordinator_pb2.STATE])
        timeout = check_seconds("timeout", timeout, allow_none=True)
        for _ in self._events(request, timeout=timeout):
            pass
        job = self.status(job_id)
        if job["state"] not in TERMINAL_STATES:
            # acceld ends a followed stream early only when it is stopping.
            raise AccelError(grpc.StatusCode.UNAVAILABLE,
                             f"the watch of {job_id} ended while it was {job['state']}")
        return job

    def _events(self, request, timeout):
        call = None
        try:
            with translated():
                call = self._stub.WatchJob(request, timeout=timeout, metadata=self._metadata)
                for event in call:
                    yield to_dict(event)
        finally:
            if call is not None:
                call.cancel()  # a no-op once the stream has ended
