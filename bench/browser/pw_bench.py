"""Playwright side of bench/browser.sh: the same scripted shop loop as the Rust bench example
(type query, click Search, click the product, go back to the shop), each step followed by the
same page-text observation (wrl's snapshot script) and optionally a PNG screenshot of the same
800x600 viewport. Prints one JSON line."""
import asyncio
import json
import sys
import time

from playwright.async_api import async_playwright

# Our runtime's quieting flags (launch.rs FLAGS), not its `--renderer-process-limit=1`: Playwright
# as its users launch it. docs/benchmarks.md gives the effect of that flag on both sides.
FLAGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars"]


async def setup(browser, base, snapshot_js):
    ctx = await browser.new_context(viewport={"width": 800, "height": 600})
    page = await ctx.new_page()
    await page.goto(base + "/shop/")
    await page.evaluate(snapshot_js)
    return ctx, page


async def worker(ctx, page, base, snapshot_js, deadline, shots, counters):
    k = 0
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
        counters[0] += 1
        counters[1] += time.monotonic() - s
        k += 1
    # The loop's end, before the context is closed (closing it is not a step).
    counters[2] = max(counters[2], time.monotonic())
    await ctx.close()


async def main():
    base, n, secs, shots, js_path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
    snapshot_js = open(js_path).read()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        counters = [0, 0.0, 0.0]
        pages = await asyncio.gather(*[setup(browser, base, snapshot_js) for _ in range(n)])
        t0 = time.monotonic()
        deadline = t0 + secs
        await asyncio.gather(*[worker(c, p, base, snapshot_js, deadline, shots, counters) for c, p in pages])
        el = counters[2] - t0
        await browser.close()
    steps = counters[0]
    print(json.dumps({"impl": "playwright", "concurrency": n, "screenshots": shots, "steps": steps,
                      "seconds": round(el, 2), "steps_per_s": round(steps / el, 2),
                      "mean_step_ms": round(1000 * counters[1] / max(steps, 1), 1)}))


asyncio.run(main())
