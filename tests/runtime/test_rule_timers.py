"""runtime/rule.cancel_scheduler_timers: what the Snakefile's onsuccess/onerror call."""

import threading

from genotile.runtime.rule import cancel_scheduler_timers


def test_waiting_timers_are_cancelled_and_other_threads_left_alone():
    fired = []
    timer = threading.Timer(60, lambda: fired.append(True))
    timer.start()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    cancel_scheduler_timers()
    timer.join(5)
    assert not timer.is_alive() and not fired
    assert worker.is_alive()
    stop.set()
    worker.join()
