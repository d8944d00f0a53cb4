"""accel_client against an in-process fake Coordinator: what the client sends (the token,
absolute paths, deadlines, watch requests) and how it turns gRPC failures into AccelError.
The real acceld is test_client_e2e.py's."""

import concurrent.futures
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import grpc

import accel_client
from accel.v1 import coordinator_pb2, coordinator_pb2_grpc, job_pb2

WAIT_S = 10  # every wait on the fake server's threads has this deadline


class FakeCoordinator(coordinator_pb2_grpc.CoordinatorServicer):
    """Records each request with its metadata and deadline; answers from canned replies."""

    def __init__(self):
        self.requests = {}
        self.deadlines = {}
        self.authorization = None
        self.watch_cancelled = threading.Event()
        self.endless_watch = False

    def _record(self, name, request, context):
        self.requests[name] = request
        self.deadlines[name] = context.time_remaining()
        self.authorization = dict(context.invocation_metadata()).get("authorization")

    def SubmitJob(self, request, context):
        self._record("SubmitJob", request, context)
        return coordinator_pb2.SubmitJobResponse(job=job_pb2.Job(id="job-1", state=job_pb2.QUEUED))

    def GetJob(self, request, context):
        self._record("GetJob", request, context)
        if request.job_id == "job-9":
            context.abort(grpc.StatusCode.NOT_FOUND, "job-9: no such job")
        state = job_pb2.RUNNING if request.job_id == "job-running" else job_pb2.SUCCEEDED
        return job_pb2.Job(id=request.job_id, state=state, last_step=5)

    def ListJobs(self, request, context):
        self._record("ListJobs", request, context)
        return coordinator_pb2.ListJobsResponse(jobs=[job_pb2.Job(id="job-2"), job_pb2.Job(id="job-1")])

    def WatchJob(self, request, context):
        self._record("WatchJob", request, context)
        context.add_callback(self.watch_cancelled.set)
        seq = request.from_seq
        while True:
            seq += 1
            yield job_pb2.Event(job_id=request.job_id, seq=seq, rank=-1,
                                metrics=job_pb2.MetricsEvent(step=seq - 1, loss=2.5))
            if not self.endless_watch and seq >= request.from_seq + 3:
                return
            if self.watch_cancelled.wait(0.01):
                return


class FakeServerTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeCoordinator()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        coordinator_pb2_grpc.add_CoordinatorServicer_to_server(self.fake, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.addCleanup(self.server.stop, None)
        self.target = f"127.0.0.1:{port}"
        self.client = accel_client.Client(self.target, token="secret", timeout=7)
        self.addCleanup(self.client.close)

    def test_a_token_file_is_read_and_stripped_and_sent_as_bearer(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            f.write("  abc123\n")
            f.flush()
            with accel_client.Client(self.target, token_file=f.name) as client:
                client.status("job-1")
        self.assertEqual(self.fake.authorization, "Bearer abc123")

    def test_every_unary_call_has_the_client_timeout_as_deadline(self):
        self.client.status("job-1")
        self.client.list()
        for name in ("GetJob", "ListJobs"):
            remaining = self.fake.deadlines[name]
            self.assertIsNotNone(remaining, name)
            self.assertLess(remaining, 8, name)  # 7 s, as the wire rounds it
            self.assertGreater(remaining, 0, name)
        self.assertEqual(self.fake.authorization, "Bearer secret")

    def test_submit_sends_absolute_paths_and_returns_the_job_with_defaults(self):
        job = self.client.submit("jobs/tiny.yaml", config="fsdp.yaml")
        request = self.fake.requests["SubmitJob"]
        self.assertEqual(request.job_file, os.path.abspath("jobs/tiny.yaml"))
        self.assertEqual(request.accelerate_config, os.path.abspath("fsdp.yaml"))
        self.assertEqual(request.deepspeed_config, "")
        self.assertFalse(request.HasField("spec"))
        self.assertEqual(job["id"], "job-1")
        self.assertEqual(job["state"], "QUEUED")
        self.assertEqual(job["attempt"], 0)  # a default value, present under its proto name
        self.assertIn("restarts_used", job)

    def test_list_sends_state_names_as_enum_values(self):
        jobs = self.client.list(states=["RUNNING", "QUEUED"], limit=2)
        request = self.fake.requests["ListJobs"]
        self.assertEqual(list(request.states), [job_pb2.RUNNING, job_pb2.QUEUED])
        self.assertEqual(request.limit, 2)
        self.assertEqual([j["id"] for j in jobs], ["job-2", "job-1"])

    def test_a_failed_call_raises_accel_error_naming_the_code(self):
        with self.assertRaises(accel_client.AccelError) as caught:
            self.client.status("job-9")
        error = caught.exception
        self.assertNotIsInstance(error, grpc.RpcError)
        self.assertEqual(error.code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(error.details, "job-9: no such job")
        self.assertEqual(str(error), "NOT_FOUND: job-9: no such job")

    def test_watch_follows_without_deadline_and_yields_event_dicts(self):
        events = list(self.client.watch("job-1", from_seq=4))
        request = self.fake.requests["WatchJob"]
        self.assertTrue(request.follow)
        self.assertEqual(request.from_seq, 4)
        self.assertEqual(list(request.kinds), [])
        self.assertGreater(self.fake.deadlines["WatchJob"], 1e9)  # gRPC's "none" is infinite
        self.assertEqual([e["seq"] for e in events], ["5", "6", "7"])  # int64: proto3 JSON strings
        self.assertEqual(events[0]["metrics"]["step"], "4")
        self.assertEqual(events[0]["rank"], -1)

    def test_closing_a_watch_cancels_its_stream(self):
        self.fake.endless_watch = True
        watch = self.client.watch("job-1")
        self.assertEqual(next(watch)["seq"], "1")
        self.assertEqual(next(watch)["seq"], "2")
        watch.close()
        self.assertTrue(self.fake.watch_cancelled.wait(WAIT_S), "the server saw no cancellation")

    def test_wait_watches_state_events_and_returns_the_final_job(self):
        job = self.client.wait("job-1")
        self.assertEqual(job["state"], "SUCCEEDED")
        self.assertEqual(list(self.fake.requests["WatchJob"].kinds), [coordinator_pb2.STATE])

    def test_wait_past_its_timeout_raises_deadline_exceeded(self):
        self.fake.endless_watch = True
        with self.assertRaises(accel_client.AccelError) as caught:
            self.client.wait("job-1", timeout=0.5)
        self.assertEqual(caught.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)

    def test_a_watch_that_ends_before_the_job_does_is_unavailable(self):
        with self.assertRaises(accel_client.AccelError) as caught:
            self.client.wait("job-running")
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertIn("RUNNING", str(caught.exception))


class MemoryFiguresTest(unittest.TestCase):
    # A rank's ledger as the worker sends it (typed pools, every category, zeros included) and
    # the JSON string memory events carried before issue 29 (MemoryLedger::ToJson) for the same
    # ledger: memory_figures gives exactly the old JSON's figures.
    OLD_LEDGER_JSON = (
        '{"compute":{"params":{"current":4096,"peak":8192},"grads":{"current":0,"peak":0},'
        '"optimizer_state":{"current":0,"peak":0},"activations":{"current":0,"peak":2048},'
        '"communication":{"current":0,"peak":0},"other":{"current":0,"peak":0},'
        '"total":{"current":4096,"peak":10240}},'
        '"host":{"params":{"current":0,"peak":0},"grads":{"current":0,"peak":0},'
        '"optimizer_state":{"current":12288,"peak":12288},"activations":{"current":0,"peak":0},'
        '"communication":{"current":0,"peak":0},"other":{"current":0,"peak":0},'
        '"total":{"current":12288,"peak":12288}},'
        '"nvme":{"params":{"current":0,"peak":0},"grads":{"current":0,"peak":0},'
        '"optimizer_state":{"current":0,"peak":0},"activations":{"current":0,"peak":0},'
        '"communication":{"current":0,"peak":0},"other":{"current":7,"peak":7},'
        '"total":{"current":7,"peak":7}}}')

    def test_typed_pools_give_the_figures_the_old_ledger_json_gave(self):
        old = json.loads(self.OLD_LEDGER_JSON)
        memory = job_pb2.MemoryEvent(step=3)
        for pool_name, categories in old.items():
            pool = memory.pools.add(pool=job_pb2.MemoryPoolKind.Value(
                "MEMORY_POOL_" + pool_name.upper()))
            for name, counts in categories.items():
                if name == "total":
                    pool.total_current, pool.total_peak = counts["current"], counts["peak"]
                    continue
                pool.categories.add(
                    category=job_pb2.MemoryCategoryKind.Value("MEMORY_CATEGORY_" + name.upper()),
                    current=counts["current"], peak=counts["peak"])
        event = accel_client.to_dict(job_pb2.Event(job_id="job-1", seq=5, rank=0, memory=memory))
        self.assertNotIn("ledger_json", event["memory"])
        self.assertEqual(event["memory"]["pools"][0]["pool"], "MEMORY_POOL_COMPUTE")
        self.assertEqual(accel_client.memory_figures(event), old)

    def test_an_eval_event_reads_as_a_dict(self):
        # Issue 31: evaluations reach Python clients as the other events do.
        event = accel_client.to_dict(job_pb2.Event(
            job_id="job-1", seq=9, rank=-1,
            eval=job_pb2.EvalEvent(step=10, eval_loss=2.5, eval_perplexity=12.18,
                                   eval_tokens=640)))
        self.assertEqual(event["eval"]["step"], "10")
        self.assertEqual(event["eval"]["eval_loss"], 2.5)
        self.assertEqual(event["eval"]["eval_perplexity"], 12.18)
        self.assertEqual(event["eval"]["eval_tokens"], "640")
        checkpoint = accel_client.to_dict(job_pb2.Checkpoint(step=10, eval_loss=2.5))
        self.assertEqual(checkpoint["eval_loss"], 2.5)

    def test_a_sample_event_reads_as_a_dict(self):
        # train.sample_every: samples reach Python clients as the other events do, the text
        # as it was written (newlines and all), the ids as a list.
        event = accel_client.to_dict(job_pb2.Event(
            job_id="job-1", seq=11, rank=-1,
            sample=job_pb2.SampleEvent(step=20, prompt="Once", text="upon a\ntime",
                                       ids=[117, 112, 111], stop_reason="length",
                                       tokens_per_second=250.0)))
        self.assertEqual(event["sample"]["step"], "20")
        self.assertEqual(event["sample"]["prompt"], "Once")
        self.assertEqual(event["sample"]["text"], "upon a\ntime")
        self.assertEqual(event["sample"]["ids"], [117, 112, 111])
        self.assertEqual(event["sample"]["stop_reason"], "length")
        self.assertEqual(event["sample"]["tokens_per_second"], 250.0)

    def test_an_event_without_pools_has_no_figures(self):
        metrics = accel_client.to_dict(job_pb2.Event(metrics=job_pb2.MetricsEvent(step=1)))
        self.assertEqual(accel_client.memory_figures(metrics), {})
        self.assertEqual(accel_client.memory_figures(
            accel_client.to_dict(job_pb2.Event(memory=job_pb2.MemoryEvent(device_peak=5)))), {})


class ArgumentsTest(unittest.TestCase):
    def test_neither_token_nor_token_file_is_a_value_error(self):
        with self.assertRaisesRegex(ValueError, "token or token_file"):
            accel_client.Client("127.0.0.1:1")

    def test_both_token_and_token_file_is_a_value_error(self):
        with self.assertRaisesRegex(ValueError, "not both"):
            accel_client.Client("127.0.0.1:1", token="a", token_file="/nonexistent")

    def test_an_empty_token_file_is_a_value_error_naming_it(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            f.write(" \n")
            f.flush()
            with self.assertRaisesRegex(ValueError, f"token_file {f.name} is empty"):
                accel_client.Client("127.0.0.1:1", token_file=f.name)

    def test_a_missing_token_file_names_it(self):
        with self.assertRaisesRegex(FileNotFoundError, "/nonexistent/token"):
            accel_client.Client("127.0.0.1:1", token_file="/nonexistent/token")

    def test_a_bad_timeout_is_a_value_error(self):
        for bad in (0, -1, math.nan, math.inf, "soon", None):
            with self.assertRaisesRegex(ValueError, "timeout must be a finite number", msg=bad):
                accel_client.Client("127.0.0.1:1", token="a", timeout=bad)

    def test_wait_with_a_nan_timeout_is_a_value_error(self):
        with accel_client.Client("127.0.0.1:1", token="a") as client:
            with self.assertRaisesRegex(ValueError, "timeout must be a finite number"):
                client.wait("job-1", timeout=math.nan)


def construct_in_child(token_file):
    """Runs Client(token_file=...) in a child Python with 1 GiB of address space and a deadline,
    so a client that blocks on a FIFO or reads /dev/zero without end fails the test instead of
    hanging it or eating the machine's memory. Returns (exit code or "timeout", stderr)."""
    code = ("import resource, accel_client\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            f"accel_client.Client('127.0.0.1:1', token_file={token_file!r})\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return done.returncode, done.stderr


class TokenFileTest(unittest.TestCase):
    """The token file rules acceld and accelctl share (rpc/credential_files.h)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, data):
        path = os.path.join(self.dir.name, "token")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_a_fifo_is_refused_without_blocking(self):
        fifo = os.path.join(self.dir.name, "pipe")
        os.mkfifo(fifo, 0o600)
        code, err = construct_in_child(fifo)
        self.assertEqual(code, 1, err)
        self.assertIn(f"ValueError: accel_client.Client: token_file {fifo} is a FIFO, "
                      "not a regular file", err)

    def test_a_device_is_refused_before_a_byte_is_read(self):
        code, err = construct_in_child("/dev/zero")
        self.assertEqual(code, 1, err)
        self.assertIn("token_file /dev/zero is a device, not a regular file", err)

    def test_a_file_over_8_kib_is_refused_by_its_size(self):
        path = self.write(b"x" * 9000)
        with self.assertRaisesRegex(ValueError, f"token_file {path} holds 9000 bytes; it may "
                                                "hold at most 8192"):
            accel_client.Client("127.0.0.1:1", token_file=path)

    def test_a_token_over_4096_bytes_is_refused(self):
        path = self.write(b"x" * 4097 + b"\n")
        with self.assertRaisesRegex(ValueError, "holds a 4097-byte token; a token is at most 4096"):
            accel_client.Client("127.0.0.1:1", token_file=path)
        accel_client.Client("127.0.0.1:1", token_file=self.write(b"x" * 4096 + b"\n")).close()

    def test_a_newline_inside_the_token_is_refused_naming_the_file(self):
        path = self.write(b"abc\ndef\n")
        with self.assertRaisesRegex(ValueError, f"token_file {path} holds a character that "
                                                r"cannot travel in a header \(byte 10 at offset 3"):
            accel_client.Client("127.0.0.1:1", token_file=path)

    def test_non_ascii_tokens_are_refused(self):
        with self.assertRaisesRegex(ValueError, "token holds a character that cannot travel"):
            accel_client.Client("127.0.0.1:1", token="s\u00e9cret")
        path = self.write("s\u00e9cret\n".encode())
        with self.assertRaisesRegex(ValueError, f"token_file {path} holds a character"):
            accel_client.Client("127.0.0.1:1", token_file=path)
        with self.assertRaisesRegex(ValueError, "token holds a character"):
            accel_client.Client("127.0.0.1:1", token="two words")


class TargetTest(unittest.TestCase):
    def test_a_port_out_of_range_is_a_value_error_naming_the_target(self):
        for bad in ("127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:", "127.0.0.1", "::1:7070",
                    "unix:", "", "host name:70"):
            with self.assertRaisesRegex(ValueError, "accel_client.Client: target", msg=bad):
                accel_client.Client(bad, token="a")

    def test_good_targets_are_accepted(self):
        for good in ("127.0.0.1:7070", "localhost:1", "[::1]:65535", "unix:/tmp/a.sock",
                     "dns:///acceld.accel.svc:7070"):
            accel_client.Client(good, token="a").close()

    def test_an_unreachable_acceld_is_unavailable_within_the_timeout(self):
        # Port 1 on loopback: nothing listens, so the call fails fast or at its deadline.
        with accel_client.Client("127.0.0.1:1", token="a", timeout=2) as client:
            with self.assertRaises(accel_client.AccelError) as caught:
                client.cluster()
        self.assertIn(caught.exception.code,
                      (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED))


if __name__ == "__main__":
    unittest.main()
