"""Playwright side of bench/browser.sh: the same scripted shop loop as the Rust bench example
(type query, click Search, click the product, go back to the shop), each step followed by the
same page-text observation (wrl's snapshot script) and optionally a PNG screenshot of the same
800x600 viewport, on the same browser binary as the Rust sides. Prints one JSON line."""
import asyncio
import json
import os
import sys
import time

from playwright.async_api import async_playwright

# Our runtime's quieting flags (launch.rs FLAGS), not its `--renderer-process-limit=1` or
# RenderDocument off: Playwright as its users launch it. BENCH_PW_ARGS (space-separated) adds
# flags, to measure Playwright with those too (docs/benchmarks.md).
FLAGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars"]
FLAGS += os.environ.get("BENCH_PW_ARGS", "").split()


async def setup(browser, base, snapshot_js):
    ctx = await browser.new_context(viewport={"width": 800, "height": 600})
    page = await ctx.new_page()
    await page.goto(base + "/shop/")
    await page.evaluate(snapshot_js)
    return ctx, page


class Counters:
    """Counted steps (after the warm-up), their summed seconds, the last loop's end, the sum of
    the loops' rates, and every step ended (for the CPU per step), over all loops."""

    def __init__(self):
        self.steps, self.seconds, self.last_end, self.rate, self.ended = 0, 0.0, 0.0, 0.0, 0


async def worker(page, base, snapshot_js, warm_until, deadline, shots, counters):
    # Counted as the Rust bench counts (LoopCount): steps that start during the warm-up are not
    # counted; the loop's rate is its counted steps over the time from the first counted step's
    # start to its last step's end; throughput is the sum of the loops' rates.
    k, counted, first = 0, 0, None
    while time.monotonic() < deadline:
        s = time.monotonic()
        m = k % 4
        if m == 0:
            await page.fill("input[name=q]", "blue mug")
        elif m == 1:
            await page.click("button[type=submit]")
            await page.wait_for_load_state("load")
        elif m == 2:
            await page.click("a:text-is('blue mug')")
            await page.wait_for_load_state("load")
        else:
            await page.goto(base + "/shop/")
        await page.evaluate(snapshot_js)
        if shots:
            await page.screenshot(type="png")
        counters.ended += 1
        if s >= warm_until:
            first = s if first is None else first
            counted += 1
            counters.steps += 1
            counters.seconds += time.monotonic() - s
        k += 1
    # The loop's end. Contexts are closed once every loop has ended (closing is not a step, and
    # closing one while others run would slow their last steps).
    end = time.monotonic()
    counters.last_end = max(counters.last_end, end)
    if first is not None:
        counters.rate += counted / (end - first)


def busy_ms():
    """Busy CPU time of the whole machine so far in ms (as the Rust bench's busy_ms)."""
    v = [float(x) for x in open("/proc/stat").readline().split()[1:8]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) * 10.0


async def measure_cpu(counters, warm_until, deadline):
    """Whole-machine CPU per step ended from the end of the warm-up to the deadline (ms), as the
    Rust bench's Clock::cpu."""
    await asyncio.sleep(max(0.0, warm_until - time.monotonic()))
    b0, s0 = busy_ms(), counters.ended
    await asyncio.sleep(max(0.0, deadline - time.monotonic()))
    b1, s1 = busy_ms(), counters.ended
    return (b1 - b0) / (s1 - s0) if s1 > s0 else 0.0


async def main():
    base, n, secs, shots, js_path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
    warmup = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    # The browser binary the Rust sides launch (the bench example's --print-chromium).
    exe = sys.argv[7] if len(sys.argv) > 7 else "/usr/bin/chromium"
    snapshot_js = open(js_path).read()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=exe, args=FLAGS)
        counters = Counters()
        pages = await asyncio.gather(*[setup(browser, base, snapshot_js) for _ in range(n)])
        t0 = time.monotonic()
        deadline = t0 + warmup + secs
        cpu = asyncio.create_task(measure_cpu(counters, t0 + warmup, deadline))
        await asyncio.gather(*[worker(p, base, snapshot_js, t0 + warmup, deadline, shots, counters)
                               for _, p in pages])
        cpu = await cpu
        el = counters.last_end - t0
        for c, _ in pages:
            await c.close()
        await browser.close()
    steps = counters.steps
    print(json.dumps({"impl": "playwright", "concurrency": n, "screenshots": shots, "steps": steps,
                      "seconds": round(el, 2), "steps_per_s": round(counters.rate, 2),
                      "mean_step_ms": round(1000 * counters.seconds / max(steps, 1), 1),
                      "cpu_ms_per_step": round(cpu, 1)}))


asyncio.run(main())
