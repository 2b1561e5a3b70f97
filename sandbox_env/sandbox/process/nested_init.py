"""PID 1 of the nested sandbox a hidden check's children run in (standard library only).

Runs the command as its child (pid 2, where bubblewrap's own init would put it), reaps every
orphan, passes termination signals on, and exits with the command's status (128 + N for a
signal, as bubblewrap reports it). Reaping the command itself is the point: bubblewrap's own
init reports the status through an eventfd and bubblewrap may exit on it before reaping that
init, which drops the ``wait4`` usage of the whole tree, so the check's peak RSS of a child
(``ru_maxrss``) came out as this interpreter's 19 MB instead of a training run's.
"""

import os
import signal
import sys

if __name__ == "__main__":
    child = os.fork()
    if child == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, lambda n, _f: os.kill(child, n))
    status = 0
    while True:
        try:
            died, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if died == child:
            status = st
            break
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)
