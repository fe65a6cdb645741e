import os
import random
import signal

# Ray, where a test starts it, stays on loopback: with this, Ray takes 127.0.0.1 as the node's
# address instead of the machine's own (read when ray is first imported, so set here, first).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import pytest

#: The stop signals whose handlers a test must give back (a command run in the test's process).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

# The suite starts from the default dispositions of the stop signals, however it was started:
# ``nohup`` ignores SIGHUP, and a script's ``cmd &`` ignores SIGINT, for the process and every
# process it starts (the tests' subprocesses included). Tests that stop a command with Ctrl-C
# or SIGHUP then saw nothing happen (the suite run as ``nohup ... &`` failed 5 of them).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
for _sig in (signal.SIGTERM, signal.SIGHUP):
    if signal.getsignal(_sig) is signal.SIG_IGN:
        signal.signal(_sig, signal.SIG_DFL)


def _handlers_given_back():
    """Around a test (or a module, for its module-scoped fixtures): the process's SIGTERM and
    SIGINT handlers are as before, or the test errors, naming the handler left behind. One
    left behind changes how later tests in the worker end on a stop signal: Ray's SIGTERM
    handler (``sys.exit``), which ``ray.shutdown`` leaves, once took a pytest-xdist worker down
    in a test that stops a command with SIGTERM."""
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    yield
    left = {signal.Signals(s).name: h for s in STOP_SIGNALS
            if (h := signal.getsignal(s)) is not before[s]}
    for s, h in before.items():
        if h is not None:
            signal.signal(s, h)
    assert not left, f"signal handlers left changed: {left}"


signal_handlers_given_back = pytest.fixture(autouse=True)(_handlers_given_back)
module_signal_handlers_given_back = pytest.fixture(scope="module", autouse=True)(
    _handlers_given_back)


@pytest.fixture
def rng():
    return random.Random(1234)
