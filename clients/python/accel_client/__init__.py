"""accel_client: a Python client of acceld, accel's coordinator daemon (docs/python_client.md).

    with accel_client.Client("127.0.0.1:7070", token_file="~/.local/state/accel/token") as c:
        job = c.submit("configs/jobs/job_default.yaml")
        final = c.wait(job["id"])

Needs python3-grpcio and python3-protobuf, and the stubs the build generates from proto/
(target accel_python_client) next to this package: PYTHONPATH=build/clients/python.
"""

try:
    import grpc  # noqa: F401  (checked first: its absence is the common setup mistake)
    import google.protobuf  # noqa: F401
except ImportError as error:
    raise ImportError(f"accel_client needs python3-grpcio and python3-protobuf "
                      f"(scripts/install-deps.sh): {error}") from error

try:
    import accel.v1.coordinator_pb2_grpc  # noqa: F401
except ImportError as error:
    raise ImportError(f"accel_client: the generated stubs (accel.v1) are missing; build the "
                      f"accel_python_client target and use PYTHONPATH=build/clients/python: "
                      f"{error}") from error

from .client import TERMINAL_STATES, Client, memory_figures, to_dict
from .errors import AccelError

__all__ = ["AccelError", "Client", "TERMINAL_STATES", "memory_figures", "to_dict"]
