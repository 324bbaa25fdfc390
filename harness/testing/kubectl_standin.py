"""A ``kubectl`` stand-in for cluster-free guard specs: ``port-forward``, ``version``, ``config current-context``,
and scripted answers to any other command.

Run as a script (the ``kubectl_standin`` fixture writes a ``kubectl`` wrapper with the venv's interpreter on
PATH). The scenario is a JSON file named by ``KUBECTL_STANDIN_SCENARIO``::

    {"target_port": 8123,            # the local server playing the pod
     "mode": "relay",                # see below
     "after": 0,                     # connections relayed normally before the mode's fault applies
     "exit_code": 1,                 # for exit-after / port-in-use
     "silent": false,                # exit-after without any stderr (older kubectl's exit 0)
     "delay": 0.3,                   # die-mid-request: seconds after the request arrived
     "ignore_sigint": false,         # make the harness escalate to SIGKILL
     "grandchild": false,            # start a helper in the same process group (pid in ``grandchildren``)
     "stderr_banner": null,          # one line written to stderr at start (a client warning)
     "listen_delay": null,           # print the banner, listen() only this many seconds later
     "ipv6_first_port_offset": null, # print a [::1] line first with another port (parser check)
     "version": "v1.32.0-standin",
     "current_context": "standin",   # answer to `config current-context`; null: "current-context is not set"
     "contexts": ["standin"],        # answer to `config get-contexts -o name`
     "responses": [{"match": ["get", "deployments"], "stdout": "...", "stderr": "", "exit": 0,
                    "sleep": 0, "grandchild": false}]}

Any command other than ``port-forward``, ``version`` and ``config current-context`` is answered by the first
response whose ``match`` words all occur in argv, in order; ``sleep`` makes it hang (seconds), ``grandchild``
first starts a child that sleeps as long, to prove a timeout kills the whole group. No match: exit 1 with
kubectl's unknown-command wording.

Modes (all bind ``127.0.0.1:0`` and print kubectl's banner lines unless noted):

- ``relay``: relay every connection to the target (kubectl on a healthy pod);
- ``no-banner``: bind, print nothing, stay alive;
- ``exit-after``: after ``after`` connections, the next one gets kubectl's ``an error occurred forwarding ...
  connection refused`` and ``lost connection to pod`` lines and the process exits ``exit_code``
  (kubernetes/kubernetes#103526 since v1.23; exit code 1 since kubernetes/kubernetes#114460, 0 before);
  ``silent`` prints nothing;
- ``reset-all``: after ``after`` connections, stay alive but reset every connection, printing ``an error
  occurred forwarding`` each time (a ``svc/`` forward pinned to a dead pod, kubernetes/kubectl#686);
- ``die-mid-request``: after ``after`` connections, the next one is relayed and the process exits 1
  ``delay`` seconds after that connection arrived, with ``lost connection to pod``;
- ``tunnel-error``: after ``after`` connections, stay alive but hold each new connection ``delay`` seconds
  without a byte, then print ``line`` to stderr (default: kubectl's ``error creating error stream for port
  P -> R: Timeout occurred``, what it prints when the API server never opens the tunnel's streams) and close
  it, unless ``keep_open`` (then the connection hangs on);
- ``port-in-use``: print kubectl's ``Unable to listen on port ... address already in use`` lines, exit 1.

Every invocation appends its argv to ``argv.jsonl``, its pid to ``pids`` and what it saw of its environment
(every variable's name, and the values of the kubeconfig, preference and proxy variables) to ``env.jsonl``
next to the scenario file.
The process gives up by itself after ``max_life`` seconds (default 120), so even a harness bug cannot leave
it running for long.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PREFIX = "E1130 04:00:00.000000   12345 portforward.go:413] "
_ENV_RECORDED = ("KUBECONFIG", "KUBERC", "KUBECTL_KUBERC", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")


def main(argv: list[str]) -> int:
    scenario_path = Path(os.environ["KUBECTL_STANDIN_SCENARIO"])
    scenario = json.loads(scenario_path.read_text())
    with open(scenario_path.with_name("argv.jsonl"), "a") as f:
        f.write(json.dumps(argv) + "\n")
    with open(scenario_path.with_name("pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    with open(scenario_path.with_name("env.jsonl"), "a") as f:
        seen = {name: os.environ.get(name) for name in _ENV_RECORDED}
        f.write(json.dumps({"names": sorted(os.environ), **seen}) + "\n")
    args = _strip_globals(argv)
    if args[:1] == ["version"]:
        version = scenario.get("version", "v1.32.0-standin")
        print(json.dumps({"clientVersion": {"gitVersion": version, "major": "1", "minor": "32"}}))
        return 0
    if args[:2] == ["config", "current-context"]:
        return _current_context(scenario)
    if args[:2] == ["config", "get-contexts"]:
        print("\n".join(scenario.get("contexts", ["standin"])))
        return 0
    if args[:1] != ["port-forward"]:
        return _scripted(scenario, argv)
    if len(args) < 3:
        print(f"error: TYPE/NAME and list of ports are required for port-forward, got {args}", file=sys.stderr)
        return 1
    give_up = threading.Timer(float(scenario.get("max_life", 120.0)), lambda: os._exit(3))
    give_up.daemon = True
    give_up.start()
    return PortForward(scenario, remote=int(args[2].split(":")[-1])).run()


def _current_context(scenario: dict[str, Any]) -> int:
    context = scenario.get("current_context", "standin")
    if context is None:
        print("error: current-context is not set", file=sys.stderr)
        return 1
    print(context)
    return 0


def _scripted(scenario: dict[str, Any], argv: list[str]) -> int:
    for response in scenario.get("responses", []):
        if _contains_in_order(argv, response["match"]):
            if response.get("grandchild"):
                subprocess.Popen(
                    [sys.executable, "-c", f"import time; time.sleep({float(response.get('sleep') or 60)})"]
                )
            if response.get("sleep"):
                time.sleep(float(response["sleep"]))
            sys.stdout.write(response.get("stdout", ""))
            sys.stderr.write(response.get("stderr", ""))
            return int(response.get("exit", 0))
    print(
        f'error: unknown command "{" ".join(_strip_globals(argv))}" for "kubectl" '
        "(the stand-in has no scripted answer)",
        file=sys.stderr,
    )
    return 1


def _contains_in_order(argv: list[str], words: list[str]) -> bool:
    position = 0
    for word in words:
        if word not in argv[position:]:
            return False
        position = argv.index(word, position) + 1
    return True


def _strip_globals(argv: list[str]) -> list[str]:
    """Drop ``--kubeconfig X``, ``--context X``, ``-n X`` so the subcommand comes first."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--kubeconfig", "--context", "-n", "--namespace"):
            skip = True
        else:
            out.append(arg)
    return out


class PortForward:
    def __init__(self, scenario: dict[str, Any], remote: int) -> None:
        self.s = scenario
        self.remote = remote
        self.mode = scenario.get("mode", "relay")
        self.after = int(scenario.get("after", 0))
        self.connections = 0

    def run(self) -> int:
        if self.s.get("ignore_sigint"):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        else:
            # kubectl port-forward stops on SIGINT even when started with it ignored (as a background job of a
            # non-interactive shell is): Go's signal.Notify takes an ignored signal back. Python would keep ignoring it.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if self.s.get("grandchild"):
            helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            with open(Path(os.environ["KUBECTL_STANDIN_SCENARIO"]).with_name("grandchildren"), "a") as f:
                f.write(f"{helper.pid}\n")
        if self.s.get("stderr_banner"):
            print(self.s["stderr_banner"], file=sys.stderr, flush=True)
        if self.mode == "port-in-use":
            return self._port_in_use()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        if self.s.get("listen_delay"):
            # Banner first, listen later: kubectl prints the banner before it can carry a connection.
            threading.Timer(float(self.s["listen_delay"]), listener.listen, args=(16,)).start()
        else:
            listener.listen(16)
        if self.mode != "no-banner":
            offset = self.s.get("ipv6_first_port_offset")
            if offset is not None:
                print(f"Forwarding from [::1]:{port + int(offset)} -> {self.remote}", flush=True)
            print(f"Forwarding from 127.0.0.1:{port} -> {self.remote}", flush=True)
            if offset is None:
                print(f"Forwarding from [::1]:{port} -> {self.remote}", flush=True)
        if self.s.get("listen_delay"):
            time.sleep(float(self.s["listen_delay"]) + 0.05)  # accept() on an unlistened socket fails
        while True:
            conn, _ = listener.accept()
            self.connections += 1
            print(f"Handling connection for {port}", flush=True)
            faulty = self.connections > self.after
            if not faulty or self.mode in ("relay", "no-banner"):
                self._relay(conn)
            elif self.mode == "exit-after":
                return self._exit_after(conn, port)
            elif self.mode == "reset-all":
                self._error_line(port, 'failed to find sandbox "0123abcd" in store: not found')
                _reset(conn)
            elif self.mode == "tunnel-error":
                holding = threading.Timer(float(self.s.get("delay", 0.3)), self._tunnel_error, args=(conn, port))
                holding.daemon = True
                holding.start()
            elif self.mode == "die-mid-request":
                self._relay(conn)
                dying = threading.Timer(float(self.s.get("delay", 0.3)), self._die, args=(port,))
                dying.daemon = True
                dying.start()

    def _relay(self, conn: socket.socket) -> None:
        try:
            pod_side = socket.create_connection(("127.0.0.1", int(self.s["target_port"])), timeout=5)
        except OSError as exc:
            self._error_line(conn.getsockname()[1], f"dial tcp4 127.0.0.1:{self.remote}: connect: {exc}")
            _reset(conn)
            return
        pod_side.settimeout(None)
        for a, b in ((conn, pod_side), (pod_side, conn)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def _error_line(self, port: int, why: str) -> None:
        print(
            f"{PREFIX}an error occurred forwarding {port} -> {self.remote}: error forwarding port {self.remote} "
            f"to pod 0123abcd, uid : {why}",
            file=sys.stderr,
            flush=True,
        )

    def _exit_after(self, conn: socket.socket, port: int) -> int:
        code = int(self.s.get("exit_code", 1))
        if not self.s.get("silent"):
            self._error_line(
                port,
                f'failed to execute portforward in network namespace "/var/run/netns/cni-1": '
                f'failed to connect to localhost:{self.remote} inside namespace "0123abcd", '
                f"IPv4: dial tcp4 127.0.0.1:{self.remote}: connect: connection refused "
                f"IPv6 dial tcp6 [::1]:{self.remote}: connect: connection refused ",
            )
            print("error: lost connection to pod", file=sys.stderr, flush=True)
        conn.close()
        return code

    def _tunnel_error(self, conn: socket.socket, port: int) -> None:
        line = self.s.get("line") or f"error creating error stream for port {port} -> {self.remote}: Timeout occurred"
        print(f"{PREFIX}{line}", file=sys.stderr, flush=True)
        if not self.s.get("keep_open"):
            conn.close()

    def _die(self, port: int) -> None:
        self._error_line(port, "error creating error stream for port: Timeout occurred")
        print("error: lost connection to pod", file=sys.stderr, flush=True)
        os._exit(1)

    def _port_in_use(self) -> int:
        print(
            "Unable to listen on port 0: Listeners failed to create with the following errors: [unable to create "
            "listener: Error listen tcp4 127.0.0.1:0: bind: address already in use]",
            file=sys.stderr,
            flush=True,
        )
        print(
            f"error: unable to listen on any of the requested ports: [{{0 {self.remote}}}]", file=sys.stderr, flush=True
        )
        return int(self.s.get("exit_code", 1))


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # kubectl exits quietly on SIGINT
        sys.exit(0)
