#!/usr/bin/python3
"""A fork server for the test suites' Python runs (test/run_tests.sh starts it).

Most suites run PyTorch reference scripts, often several a suite, and each
fresh python3 spends 2-3 s of one core importing torch before its first line:
~100 such starts make up minutes of `make test` and most of `make check`.
This process imports torch and numpy once and then, for each script a client
(test/python) asks for, forks: the child takes the client's stdin, stdout and
stderr (passed over the Unix socket), its working folder, environment and
argv, runs the script as __main__ and exits with its status, which goes back
to the client. A child starts from the state right after the imports (no
torch operation has run in this process), so a script computes what a fresh
interpreter would: test/suites/reference.sh compares the two byte for byte.

    test/python_server.py SOCKET     serves until killed (SIGTERM)
"""
import array
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import threading
import traceback

import numpy  # noqa: F401  (imported for the children)
import torch

HEADER = struct.Struct("!I")


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("client closed the connection")
        data += chunk
    return data


def receive_request(conn):
    """(fds, request): three file descriptors and the JSON request."""
    msg, ancdata, _, _ = conn.recvmsg(HEADER.size, socket.CMSG_LEN(3 * array.array("i").itemsize))
    fds = array.array("i")
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if len(msg) < HEADER.size:
        msg += recv_exact(conn, HEADER.size - len(msg))
    (length,) = HEADER.unpack(msg)
    return list(fds), json.loads(recv_exact(conn, length))


def run_child(fds, request):
    """In the forked child: become the script's interpreter; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))
        script = os.path.abspath(request["argv"][0])
        sys.argv = [request["argv"][0]] + request["argv"][1:]
        sys.path.insert(0, os.path.dirname(script))
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:  # the traceback a fresh interpreter would print
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


def serve_one(conn):
    """Runs one request; sends back the exit status (a negative signal number
    if the script was killed). A client that goes away kills its script."""
    with conn:
        try:
            fds, request = receive_request(conn)
        except (ConnectionError, ValueError, OSError) as e:
            print(f"python_server: bad request: {e}", file=sys.stderr)
            return
        pid = os.fork()
        if pid == 0:
            run_child(fds, request)
        for fd in fds:
            os.close(fd)
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            readable, _, _ = select.select([conn], [], [], 0.02)
            if readable and not conn.recv(1, socket.MSG_PEEK):
                os.kill(pid, signal.SIGKILL)  # the client was killed: so is its script
        code = os.waitstatus_to_exitcode(status)
        try:
            conn.sendall(HEADER.pack(code & 0xFFFFFFFF))
        except OSError:
            pass


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    path = argv[1]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.unlink(tmp)
    server.bind(tmp)
    server.listen(16)
    os.rename(tmp, path)  # the socket appears only once the imports are done
    try:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()
    finally:
        server.close()
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
