"""The CPU sampler against threads whose stacks change under it all the time.

On CPython 3.11 a sampler that follows `f_back` from another thread's frame, after that thread has
returned from it, reads freed memory: the sampler met ints and dicts where callers should be, then
the process died of a segfault (it did within a second with the sampler that walked frame by frame).
The child process here runs the real sampler at full speed, with the interpreter switching threads
every microsecond, while other threads recurse, raise, run generators and coroutines, and start and
end short-lived threads. It must end cleanly and have seen the workers' functions.
"""

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent('''
    import asyncio, sys, threading, time
    sys.setswitchinterval(1e-6)
    from flamewatch.selfprofile import cpu

    def churn_recurse(n):
        return sum(range(20)) if n == 0 else churn_recurse(n - 1) + 1

    def churn_raise(n):
        if n == 0:
            raise ValueError(n)
        return churn_raise(n - 1)

    def churn_generator(n):
        for i in range(n):
            try:
                churn_raise(i % 15)
            except ValueError:
                pass
            yield churn_recurse(i % 30)

    def worker(stop):
        while not stop.is_set():
            sum(churn_generator(40))

    def short_lived(stop):
        while not stop.is_set():
            thread = threading.Thread(target=lambda: [churn_recurse(25) for _ in range(20)])
            thread.start()
            thread.join()

    async def churn_coroutine(n):
        if n == 0:
            await asyncio.sleep(0)
            raise KeyError(n)
        return await churn_coroutine(n - 1)

    async def gather(stop):
        while not stop.is_set():
            await asyncio.gather(*(churn_coroutine(i % 20) for i in range(50)), return_exceptions=True)

    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(stop,)) for _ in range(3)]
    threads += [threading.Thread(target=lambda: asyncio.run(gather(stop))) for _ in range(2)]
    threads += [threading.Thread(target=short_lived, args=(stop,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    sampler = cpu._Sampler()
    sampler._clocks._enabled = False  # look at every thread at every call, as often as possible
    deadline = time.monotonic() + float(sys.argv[1])
    samples = 0
    while time.monotonic() < deadline:
        sampler.sample()
        samples += 1
    stop.set()
    for thread in threads:
        thread.join()
    profile = sampler.profile(0, 0)
    names = {profile.string(i) for i in profile.functions.name}
    print(samples, " ".join(sorted(n.rsplit(".", 1)[-1] for n in names if "churn_" in n)))
''')


def test_sampler_survives_threads_that_keep_changing_their_stacks():
    child = subprocess.run([sys.executable, "-c", CHILD, "12"], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, f"exit {child.returncode}\n{child.stderr[-3000:]}"
    assert child.stderr == ""
    samples, names = child.stdout.split(maxsplit=1)
    assert int(samples) > 1000
    assert set(names.split()) >= {"churn_recurse", "churn_raise", "churn_generator", "churn_coroutine"}
