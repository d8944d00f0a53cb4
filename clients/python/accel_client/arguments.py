"""The checks accel_client.Client makes on its arguments before it dials: the token (or the
token file) under the rules acceld and accelctl apply, the timeouts, the target's form.
Each failure is a ValueError naming the argument (docs/python_client.md "Errors")."""

import math
import os
import stat

# The rules acceld and accelctl apply to token files (rpc/credential_files.h, docs/rpc.md
# "Auth"): a regular file, opened without blocking, of at most 8 KiB; its token is the text
# without surrounding ASCII whitespace, 1..4096 bytes of printable ASCII without spaces.
MAX_TOKEN_BYTES = 4096
MAX_TOKEN_FILE_BYTES = 2 * MAX_TOKEN_BYTES
_ASCII_WHITESPACE = " \t\n\v\f\r"
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def _read_token_file(path):
    """The bytes of the token file `path`: a regular file of at most MAX_TOKEN_FILE_BYTES.
    O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; a device such as
    /dev/zero never ends. Both are refused before a byte is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _FILE_KINDS if test(st.st_mode)), "not a regular file")
            raise ValueError(f"accel_client.Client: token_file {path} is {kind}, "
                             "not a regular file")
        if st.st_size > MAX_TOKEN_FILE_BYTES:
            raise ValueError(f"accel_client.Client: token_file {path} holds {st.st_size} bytes; "
                             f"it may hold at most {MAX_TOKEN_FILE_BYTES}: is it the right file?")
        chunks = []
        left = st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check_token(token, source):
    """The token under the shared rules; `token` is bytes (a file's) or str (given)."""
    if isinstance(token, str):
        token = token.encode("utf-8", errors="surrogateescape")
    token = token.strip(_ASCII_WHITESPACE.encode())
    if not token:
        raise ValueError(f"accel_client.Client: {source} is empty")
    if len(token) > MAX_TOKEN_BYTES:
        raise ValueError(f"accel_client.Client: {source} holds a {len(token)}-byte token; a token "
                         f"is at most {MAX_TOKEN_BYTES} (it travels in a gRPC header)")
    for i, byte in enumerate(token):
        if byte < 0x21 or byte > 0x7E:
            raise ValueError(f"accel_client.Client: {source} holds a character that cannot "
                             f"travel in a header (byte {byte} at offset {i}; a token is "
                             "printable ASCII without spaces, on one line)")
    return token.decode("ascii")


def read_token(token, token_file):
    if token is None and token_file is None:
        raise ValueError("accel_client.Client: give token or token_file "
                         "(acceld writes its token to <state-dir>/token)")
    if token is not None and token_file is not None:
        raise ValueError("accel_client.Client: give token or token_file, not both")
    if token_file is not None:
        token_file = os.path.expanduser(os.fspath(token_file))
        return _check_token(_read_token_file(token_file), f"token_file {token_file}")
    if not isinstance(token, str):
        raise ValueError(f"accel_client.Client: token must be a str, got {type(token).__name__}")
    return _check_token(token, "token")


def check_seconds(name, value, allow_none=False):
    """`value` as float seconds: finite and > 0 (None only where it means "no limit")."""
    if value is None and allow_none:
        return None
    try:
        seconds = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        seconds = None
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"accel_client.Client: {name} must be a finite number of seconds > 0, "
                         f"got {value!r}")
    return seconds


_FORM = "give host:port (e.g. 127.0.0.1:7070) or unix:/path"
_URI_SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix-abstract:", "vsock:")


def check_target(target):
    """The checks accelctl makes on --server (rpc::CheckServerAddress): gRPC would wrap a port
    above 65535 and dial another one."""
    if not isinstance(target, str) or not target:
        raise ValueError(f"accel_client.Client: target {target!r}: empty; {_FORM}")
    if target.startswith("unix:"):
        if target == "unix:":
            raise ValueError(f"accel_client.Client: target {target}: no socket path after unix:")
        return target
    if target.startswith(_URI_SCHEMES):
        return target
    if target.startswith("["):
        close = target.find("]")
        if close < 0 or target[close + 1:close + 2] != ":":
            raise ValueError(f"accel_client.Client: target {target}: an IPv6 address is "
                             f"[ADDR]:port; {_FORM}")
        host, port = target[1:close], target[close + 2:]
    else:
        host, sep, port = target.rpartition(":")
        if not sep:
            raise ValueError(f"accel_client.Client: target {target}: no port; {_FORM}")
        if ":" in host:
            raise ValueError(f"accel_client.Client: target {target}: an IPv6 address goes in "
                             "brackets, e.g. [::1]:7070")
        bad = [c for c in host if not (c.isascii() and (c.isalnum() or c in ".-_"))]
        if bad:
            raise ValueError(f"accel_client.Client: target {target}: the host holds {bad[0]!r}; "
                             f"{_FORM}")
    if not host:
        raise ValueError(f"accel_client.Client: target {target}: no host; {_FORM}")
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535):
        raise ValueError(f"accel_client.Client: target {target}: port {port!r} is not a number "
                         "in 1..65535")
    return target
