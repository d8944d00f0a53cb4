"""AcceldProcess: a real acceld for the Python client's tests, in its own process and state
directory, listening on a free loopback port and on a unix socket."""

import os
import signal
import subprocess
import time


class AcceldProcess:
    def __init__(self, acceld_bin, worker_bin, work_dir, cpu_slots=2):
        self.acceld_bin = acceld_bin
        self.worker_bin = worker_bin
        self.work_dir = work_dir
        self.cpu_slots = cpu_slots
        self.state_dir = os.path.join(work_dir, "state")
        self.token_file = os.path.join(self.state_dir, "token")
        self.unix_socket = os.path.join(work_dir, "acceld.sock")
        self.log_path = os.path.join(work_dir, "acceld.log")
        self.address = None
        self._process = None

    def start(self, deadline_s=30):
        """Starts acceld and returns once it has written its address (it is serving then);
        RuntimeError with acceld's log when it exits or stays silent past the deadline."""
        address_file = os.path.join(self.work_dir, "address")
        argv = [self.acceld_bin, "--listen", "127.0.0.1:0", "--address-file", address_file,
                "--unix-socket", self.unix_socket, "--state-dir", self.state_dir,
                "--cpu-slots", str(self.cpu_slots), "--worker-bin", self.worker_bin,
                "--stop-grace", "3"]
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT)
        until = time.monotonic() + deadline_s
        while not os.path.exists(address_file):  # acceld renames it into place: never partial
            if self._process.poll() is not None:
                raise RuntimeError(f"acceld exited with {self._process.returncode}:\n{self.log()}")
            if time.monotonic() > until:
                raise RuntimeError(f"acceld wrote no {address_file} in {deadline_s} s:\n{self.log()}")
            time.sleep(0.05)
        with open(address_file, encoding="utf-8") as f:
            self.address = f.read().strip()

    def kill(self):
        """SIGKILL; its workers die with it (acceld starts them with PR_SET_PDEATHSIG)."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.send_signal(signal.SIGKILL)
        self._process.wait(timeout=10)

    def log(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-4000:]
        except OSError as error:
            return f"(no log: {error})"
