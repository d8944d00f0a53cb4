"""AccelError: the one exception accel_client raises for a failed call to acceld.

grpc.RpcError is caught only here (the adapter); callers see AccelError with the gRPC status
code, whose meaning is the same as acceld's absl::Status code (docs/rpc.md, STYLE.md):
INVALID_ARGUMENT bad job file or spec, NOT_FOUND unknown job, FAILED_PRECONDITION wrong
state, UNAUTHENTICATED missing or wrong token, UNAVAILABLE acceld unreachable,
DEADLINE_EXCEEDED the call's timeout passed.
"""

import contextlib

import grpc


class AccelError(Exception):
    """A call to acceld failed. `.code` is a grpc.StatusCode, `.details` acceld's message."""

    def __init__(self, code, details):
        self.code = code
        self.details = details or ""
        super().__init__(str(self))

    def __str__(self):
        return f"{self.code.name}: {self.details}" if self.details else self.code.name


def from_rpc_error(error):
    """The AccelError for a grpc.RpcError (a failed call, or a stream that ended in error)."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return AccelError(code or grpc.StatusCode.UNKNOWN, details)


@contextlib.contextmanager
def translated():
    """Turns a grpc.RpcError raised in the block into AccelError (`from None`: the gRPC
    traceback says nothing the code and details do not)."""
    try:
        yield
    except grpc.RpcError as error:
        raise from_rpc_error(error) from None
