"""A scripted stand-in for ``kubectl`` (the fixture puts it first on PATH under the name ``kubectl``).

It reads its scenario from the JSON file named by ``$KUBECTL_STANDIN``:

    {"log": "<path>",                      # each call's argv is appended here as one JSON line
     "current_context": "minikube",        # answer to `config current-context`; null: "current-context is not set"
     "responses": [{"match": ["get", "agentruns"], "stdout": "...", "stderr": "", "exit": 0,
                    "sleep": 0, "grandchild": false}]}

The first response whose ``match`` words all occur in argv (in order) answers. ``sleep`` makes it hang
(seconds); ``grandchild`` first starts a child that sleeps too, to prove a timeout kills the whole group.
An argv that matches nothing exits 1 with kubectl's unknown-command wording.
"""

import json
import os
import subprocess
import sys
import time


def matches(words, argv):
    position = 0
    for word in words:
        try:
            position = argv.index(word, position) + 1
        except ValueError:
            return False
    return True


def main():
    with open(os.environ["KUBECTL_STANDIN"], encoding="utf-8") as f:
        scenario = json.load(f)
    argv = sys.argv[1:]
    with open(scenario["log"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"argv": argv, "pid": os.getpid(), "pgid": os.getpgid(0)}) + "\n")
    if matches(["config", "current-context"], argv):
        context = scenario.get("current_context")
        if context is None:
            sys.stderr.write("error: current-context is not set\n")
            return 1
        print(context)
        return 0
    for response in scenario.get("responses", []):
        if matches(response["match"], argv):
            if response.get("grandchild"):
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            if response.get("sleep"):
                time.sleep(response["sleep"])
            sys.stdout.write(response.get("stdout", ""))
            sys.stderr.write(response.get("stderr", ""))
            return response.get("exit", 0)
    sys.stderr.write(f"error: unknown command {' '.join(argv)!r} for \"kubectl\" (stand-in has no scripted answer)\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
